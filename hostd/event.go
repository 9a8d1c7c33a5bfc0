package hostd

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/mailbox"
)

// The "type" words of an inbound JSON line.
const (
	InputMessage = "message" // a chat message (the default)
	InputClick   = "click"   // a click on a card's button
)

// Event is one inbound chat message as a channel adapter hands it to the
// router: one JSON object per line on `sessiondb route` and on the host's
// event endpoint. Everything the router decides is read from these fields;
// the mailbox row's content is built from them in NanoClaw's chat shape
// ({sender, senderId, text, attachments?, isMention?, isGroup?}).
//
//	{"channel_type":"telegram","platform_id":"-100123","message_id":"m1",
//	 "sender":{"id":"42","name":"Ann"},"text":"hello @bot","is_group":true,
//	 "is_mention":true}
//
// An adapter whose platform has no threads sends no thread_id; a thread_id
// makes the adapter a threaded one for this event (in a group chat that
// routes per thread, spec A4). A DM (is_group false) counts as a mention.
type Event struct {
	// Type is "message" or empty.
	Type string `json:"type,omitempty"`
	// ChannelType names the platform ("telegram", "discord", "slack"...).
	ChannelType string `json:"channel_type"`
	// PlatformID is the chat's id on the platform.
	PlatformID string `json:"platform_id"`
	// ThreadID is the thread inside the chat; empty for none.
	ThreadID string `json:"thread_id,omitempty"`
	// MessageID is the platform's message id; the mailbox row of agent
	// group G is "<message id>:<chat id>:<G>" (InboundID), so a redelivered
	// event is stored once and two chats' messages never share a row.
	MessageID string `json:"message_id"`
	// Sender is who wrote it; an empty id is an unidentified sender.
	Sender Sender `json:"sender"`
	// Text is the message text (the engage patterns are tested on it).
	Text string `json:"text"`
	// Mentions lists the platform user ids the message mentions; kept in
	// the content for the agent.
	Mentions []string `json:"mentions,omitempty"`
	// Attachments are files; those with base64 Data are written to the
	// session's inbox/ folder.
	Attachments []mailbox.Attachment `json:"attachments,omitempty"`
	// IsGroup says the chat has more than two people.
	IsGroup bool `json:"is_group"`
	// IsMention says the bot was mentioned (a DM always counts as one).
	IsMention bool `json:"is_mention"`
	// ChatName names the chat; used when the router creates it.
	ChatName string `json:"chat_name,omitempty"`
	// Timestamp is when the platform saw the message (ISO-8601); the
	// host's clock when empty.
	Timestamp string `json:"timestamp,omitempty"`

	// An event read back from an approval request NanoClaw stored keeps
	// what NanoClaw's replay would write: its row kind (chat-sdk), its
	// content whole (raw) and where its answers go (replyTo).
	kind    string
	raw     json.RawMessage
	replyTo *mailbox.Routing
}

// Sender identifies who wrote a message. ID is the platform's user id,
// namespaced by the router as "<channel type>:<id>" unless it holds a ':'.
type Sender struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

// Mentioned reports whether the event counts as a mention: an explicit one
// or a DM.
func (e Event) Mentioned() bool { return e.IsMention || !e.IsGroup }

// UserID is the sender's namespaced user id ("" when unidentified).
func (e Event) UserID() string { return sessiondb.SenderUserID(e.ChannelType, e.Sender.ID) }

// maxEventText bounds an event's text and each attachment's data.
const maxEventText = sessiondb.MaxPayloadBytes

// Validate refuses an event the router cannot store faithfully; the error
// is invalid and names the field.
func (e Event) Validate() error {
	if e.Type != "" && e.Type != InputMessage {
		return sessiondb.Errorf(sessiondb.EINVALID, "type %q: want message or click", errtext.Clip(e.Type, 40))
	}
	if err := (sessiondb.NewMessagingGroup{ChannelType: e.ChannelType, PlatformID: e.PlatformID, Name: e.ChatName}).Validate(); err != nil {
		return err
	}
	if e.ChannelType == sessiondb.ChannelAgentType {
		return sessiondb.Errorf(sessiondb.EINVALID, "channel_type %q is reserved for agent-to-agent messages", e.ChannelType)
	}
	if err := sessiondb.CheckSafeName("message_id", e.MessageID); err != nil {
		return err
	}
	// The row id appends ":<agent group id>"; keep room for a long one.
	if len(e.MessageID) > sessiondb.MaxNameLen-64 {
		return sessiondb.Errorf(sessiondb.EINVALID, "message_id is %d bytes, the limit is %d", len(e.MessageID), sessiondb.MaxNameLen-64)
	}
	if err := checkPlain("thread_id", e.ThreadID, sessiondb.MaxPlatformID, false); err != nil {
		return err
	}
	if e.Sender.ID != "" {
		if err := sessiondb.CheckUserID("sender.id", e.UserID()); err != nil {
			return err
		}
	}
	if err := checkPlain("sender.name", e.Sender.Name, sessiondb.MaxNameText, false); err != nil {
		return err
	}
	if err := checkPlain("text", e.Text, maxEventText, true); err != nil {
		return err
	}
	for i, m := range e.Mentions {
		if err := checkPlain(fmt.Sprintf("mentions[%d]", i), m, sessiondb.MaxPlatformID, false); err != nil {
			return err
		}
	}
	for i, a := range e.Attachments {
		field := fmt.Sprintf("attachments[%d]", i)
		for _, f := range []struct{ n, v string }{{"type", a.Type}, {"name", a.Name}, {"filename", a.Filename}, {"mimeType", a.MimeType}, {"url", a.URL}} {
			if err := checkPlain(field+"."+f.n, f.v, sessiondb.MaxPlatformID, false); err != nil {
				return err
			}
		}
		if a.LocalPath != "" {
			return sessiondb.Errorf(sessiondb.EINVALID, "%s.localPath: set by the host, not by an adapter", field)
		}
		if len(a.Data) > maxEventText*4/3+4 {
			return sessiondb.Errorf(sessiondb.EINVALID, "%s.data is %d bytes, the limit is %d", field, len(a.Data), maxEventText*4/3+4)
		}
		if a.Data != "" {
			if _, err := base64.StdEncoding.DecodeString(a.Data); err != nil {
				return sessiondb.Errorf(sessiondb.EINVALID, "%s.data is not base64: %v", field, err)
			}
		}
	}
	if e.Timestamp != "" {
		if _, ok := sessiondb.ParseTimestamp(e.Timestamp); !ok {
			return sessiondb.Errorf(sessiondb.EINVALID, "timestamp %q is not an ISO-8601 time", errtext.Clip(e.Timestamp, 64))
		}
	}
	return nil
}

// checkPlain refuses text that is too long, not UTF-8, or holds a NUL
// (and, unless multiline, any other control character).
func checkPlain(field, v string, max int, multiline bool) error {
	switch {
	case len(v) > max:
		return sessiondb.Errorf(sessiondb.EINVALID, "%s is %d bytes, the limit is %d", field, len(v), max)
	case !utf8.ValidString(v):
		return sessiondb.Errorf(sessiondb.EINVALID, "%s is not valid UTF-8", field)
	}
	for _, r := range v {
		if r == 0 || (!multiline && (r < 0x20 || r == 0x7f)) {
			return sessiondb.Errorf(sessiondb.EINVALID, "%s contains a control character", field)
		}
	}
	return nil
}

// chatContent is the mailbox content of a routed message: NanoClaw's chat
// shape, in its key order.
type chatContent struct {
	Sender      string               `json:"sender"`
	SenderID    string               `json:"senderId"`
	Text        string               `json:"text"`
	Attachments []mailbox.Attachment `json:"attachments,omitempty"`
	Mentions    []string             `json:"mentions,omitempty"`
	IsMention   bool                 `json:"isMention"`
	IsGroup     bool                 `json:"isGroup"`
}

// content builds the row content of e: sender is the display name (the
// id when there is none), senderId the namespaced user id; or the content
// of a stored event, as it was stored.
func (e Event) content() (json.RawMessage, error) {
	if e.raw != nil {
		return e.raw, nil
	}
	name := e.Sender.Name
	if name == "" {
		name = e.Sender.ID
	}
	return mailbox.MarshalContent(chatContent{Sender: name, SenderID: e.UserID(), Text: e.Text,
		Attachments: e.Attachments, Mentions: e.Mentions, IsMention: e.Mentioned(), IsGroup: e.IsGroup})
}

// rowKind is the kind of e's mailbox row: chat, or the kind a stored
// event names (NanoClaw's chat-sdk).
func (e Event) rowKind() string {
	if e.kind == mailbox.KindChatSDK {
		return e.kind
	}
	return mailbox.KindChat
}

// routing is where the agent's answers to e go: e's chat and thread, or
// the replyTo a stored event names.
func (e Event) routing() mailbox.Routing {
	if e.replyTo != nil {
		return *e.replyTo
	}
	return mailbox.Routing{ChannelType: e.ChannelType, PlatformID: e.PlatformID, ThreadID: e.ThreadID}
}

// time is the event's timestamp, or now.
func (e Event) time(now time.Time) time.Time {
	if t, ok := sessiondb.ParseTimestamp(e.Timestamp); ok && e.Timestamp != "" {
		return t
	}
	return now
}

// Click is a click on a button of a card the host sent (an agent's
// question, an action approval, an unknown sender or an unknown chat),
// as the adapter reports it:
//
//	{"type":"click","channel_type":"telegram","user_id":"42","action":"ncq:nsa-1700000000000-abc123:0"}
//
// Action is the button's data, "ncq:<card id>:<option index>"; instead
// of it a click may name CardID with Option (the index) or Value (the
// option's value, for cards whose buttons carry values).
type Click struct {
	Type        string `json:"type"`
	ChannelType string `json:"channel_type"`
	// UserID is the clicker's platform id (namespaced like a sender's).
	UserID string `json:"user_id"`
	Action string `json:"action,omitempty"`
	CardID string `json:"card_id,omitempty"`
	Option *int   `json:"option,omitempty"`
	Value  string `json:"value,omitempty"`
}

// ClickerID is the clicker's namespaced user id.
func (c Click) ClickerID() string { return sessiondb.SenderUserID(c.ChannelType, c.UserID) }

// Validate checks c and, for an Action, replaces it with the CardID and
// Option it names. The error is invalid and names the field.
func (c *Click) Validate() error {
	if c.Type != InputClick {
		return sessiondb.Errorf(sessiondb.EINVALID, "type %q: a click has type click", errtext.Clip(c.Type, 40))
	}
	if err := (sessiondb.NewMessagingGroup{ChannelType: c.ChannelType, PlatformID: "-"}).Validate(); err != nil {
		return err
	}
	if c.UserID == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "user_id is empty: a click without a clicker cannot be authorized")
	}
	if err := sessiondb.CheckUserID("user_id", c.ClickerID()); err != nil {
		return err
	}
	if c.Action != "" {
		if c.CardID != "" || c.Option != nil || c.Value != "" {
			return sessiondb.Errorf(sessiondb.EINVALID, "action: give either action or card_id with option/value, not both")
		}
		rest, ok := strings.CutPrefix(c.Action, "ncq:")
		i := strings.LastIndexByte(rest, ':')
		if !ok || i <= 0 {
			return sessiondb.Errorf(sessiondb.EINVALID, "action %q is not ncq:<card id>:<option index>", errtext.Clip(c.Action, 64))
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n < 0 {
			return sessiondb.Errorf(sessiondb.EINVALID, "action %q: the option index %q is not a number", errtext.Clip(c.Action, 64), errtext.Clip(rest[i+1:], 20))
		}
		// Validate may run again (the router checks what it is given):
		// the action is now card_id and option.
		c.CardID, c.Option, c.Action = rest[:i], &n, ""
	}
	if err := sessiondb.CheckSafeName("card_id", c.CardID); err != nil {
		return err
	}
	if c.Option == nil && c.Value == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "option: a click names the button by option (its index) or value")
	}
	if c.Option != nil && *c.Option < 0 {
		return sessiondb.Errorf(sessiondb.EINVALID, "option %d is negative", *c.Option)
	}
	return checkPlain("value", c.Value, sessiondb.MaxCardText, false)
}

// Input is one decoded inbound line: exactly one of Message and Click is
// set.
type Input struct {
	Message *Event
	Click   *Click
}

// ParseInput decodes one JSON line into a message event or a click, by
// its "type" (message when absent), and validates it. Unknown fields are
// refused, so a misspelt field is named rather than ignored. Every error
// is invalid and names the field.
func ParseInput(line []byte) (Input, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return Input{}, sessiondb.Errorf(sessiondb.EINVALID, "event: %s", jsonProblem(err))
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	switch head.Type {
	case "", InputMessage:
		e, err := decodeValid[Event](dec, "event")
		return Input{Message: e}, err
	case InputClick:
		c, err := decodeValid[Click](dec, "click")
		return Input{Click: c}, err
	}
	return Input{}, sessiondb.Errorf(sessiondb.EINVALID, "event: type %q: want message or click", errtext.Clip(head.Type, 40))
}

// decodeValid decodes one T from dec and validates it; what names it in
// the errors, which are all invalid. On error the result is nil.
func decodeValid[T any, P interface {
	*T
	Validate() error
}](dec *json.Decoder, what string) (*T, error) {
	var v T
	if err := dec.Decode(&v); err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s: %s", what, jsonProblem(err))
	}
	if err := P(&v).Validate(); err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "%s", what)
	}
	return &v, nil
}

// jsonProblem words a decoding error by the field it concerns.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("%s: want %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return fmt.Sprintf("want a JSON object, got %s", te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("not JSON (at byte %d): %v", se.Offset, err)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Sprintf("%s: unknown field", f)
	}
	return strings.TrimPrefix(msg, "json: ")
}

func jsonKind(k string) string {
	switch k {
	case "struct", "map":
		return "an object"
	case "slice":
		return "an array"
	case "int", "int64":
		return "a number"
	}
	return "a " + k
}

// key names the event among every host's events for
// sessiondb.HostLeaseService.ClaimEvent: the chat and the platform's
// message id (which holds no '/'), hashed when longer than a key may be.
func (e Event) key() string {
	k := e.ChannelType + "/" + e.PlatformID + "/" + e.MessageID
	if len(k) <= sessiondb.MaxPlatformID {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return "sha256/" + hex.EncodeToString(sum[:])
}
