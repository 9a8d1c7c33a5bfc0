package hostd

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// An approval request keeps the event that asked it, to route it again
// once approved (pending_sender_approvals.original_message and
// pending_channel_approvals.original_message). NanoClaw's permissions
// module writes its own InboundEvent there and, on a click, parses the
// column as one and hands it to its router; we do the same with the same
// shape, so a request either side stored is replayed by the other. This
// file writes that shape and reads it back, as well as the Event JSON
// sessiondb stored before it wrote NanoClaw's.

// nanoClawEvent is NanoClaw's InboundEvent (src/channels/adapter.ts), as
// its permissions module stores it: JSON.stringify of the event its router
// was given, keys in this order.
type nanoClawEvent struct {
	ChannelType string           `json:"channelType"`
	PlatformID  string           `json:"platformId"`
	ThreadID    *string          `json:"threadId"`
	Message     nanoClawMessage  `json:"message"`
	ReplyTo     *nanoClawAddress `json:"replyTo,omitempty"`
}

// nanoClawMessage is InboundEvent.message. Content is a JSON object in a
// string (the adapter's message: NanoClaw's chat shape, or the Chat SDK's
// serialized message with senderId, sender and senderName added).
type nanoClawMessage struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Content   string `json:"content"`
	Timestamp string `json:"timestamp"`
	IsMention *bool  `json:"isMention,omitempty"`
	IsGroup   *bool  `json:"isGroup,omitempty"`
}

// nanoClawAddress is InboundEvent.replyTo: where NanoClaw's command-line
// adapter asked the answers to go.
type nanoClawAddress struct {
	ChannelType string  `json:"channelType"`
	PlatformID  string  `json:"platformId"`
	ThreadID    *string `json:"threadId"`
}

// storedEventJSON is e as NanoClaw stores an event: what NanoClaw's replay
// reads (channelType, platformId, threadId: null without a thread, which
// its channel approval reads as "not a group"; message.content parsed for
// text, sender, senderId; isMention true for a DM, as its Chat SDK bridge
// says) and writes into the session as the row (id, kind, content,
// timestamp). now stamps an event without a timestamp.
func (e Event) storedEventJSON(now time.Time) (json.RawMessage, error) {
	content, err := e.content()
	if err != nil {
		return nil, err
	}
	mention, group := e.Mentioned(), e.IsGroup
	ne := nanoClawEvent{ChannelType: e.ChannelType, PlatformID: e.PlatformID, ThreadID: nullable(e.ThreadID),
		Message: nanoClawMessage{ID: e.MessageID, Kind: e.rowKind(), Content: string(content),
			Timestamp: sessiondb.FormatTimestamp(e.time(now)), IsMention: &mention, IsGroup: &group}}
	if rt := e.replyTo; rt != nil {
		ne.ReplyTo = &nanoClawAddress{ChannelType: rt.ChannelType, PlatformID: rt.PlatformID, ThreadID: nullable(rt.ThreadID)}
	}
	b, err := json.Marshal(ne)
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "store event %s", e.MessageID)
	}
	return b, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// readStoredEvent reads an approval request's stored event: NanoClaw's
// InboundEvent (whoever wrote it), or the Event JSON sessiondb wrote
// before. isGroup is the chat's own flag, for a NanoClaw event that does
// not say (its command-line adapter's); now names an event without an
// id, as NanoClaw's router does. The event is checked as a routed one is;
// the error is invalid and names the field.
func readStoredEvent(raw json.RawMessage, isGroup bool, now time.Time) (Event, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return Event{}, sessiondb.Errorf(sessiondb.EINVALID, "the stored event is not a JSON object: %v", err)
	}
	var ev Event
	if _, ours := keys["channel_type"]; ours {
		if err := json.Unmarshal(raw, &ev); err != nil {
			return ev, sessiondb.Errorf(sessiondb.EINVALID, "the stored event: %s", jsonProblem(err))
		}
	} else {
		var ne nanoClawEvent
		if err := json.Unmarshal(raw, &ne); err != nil {
			return ev, sessiondb.Errorf(sessiondb.EINVALID, "the stored event: %s", jsonProblem(err))
		}
		ev = ne.event(isGroup, now)
	}
	if err := ev.Validate(); err != nil {
		return ev, sessiondb.Wrap(sessiondb.EINVALID, err, "the stored event")
	}
	return ev, nil
}

// event is ne as the router's Event: the sender read from the content as
// NanoClaw's sender resolver reads it (senderId, else sender, else the
// Chat SDK's author.userId; the name from senderName or the author), the
// text as its engage test reads it, and the content kept whole, so the
// row written is the one NanoClaw's replay would write.
func (ne nanoClawEvent) event(isGroup bool, now time.Time) Event {
	ev := Event{ChannelType: ne.ChannelType, PlatformID: ne.PlatformID, MessageID: ne.Message.ID, Timestamp: ne.Message.Timestamp,
		IsMention: ne.Message.IsMention != nil && *ne.Message.IsMention, IsGroup: isGroup, kind: ne.Message.Kind}
	if ne.ThreadID != nil {
		ev.ThreadID = *ne.ThreadID
	}
	if ne.Message.IsGroup != nil {
		ev.IsGroup = *ne.Message.IsGroup
	}
	if ev.MessageID == "" {
		ev.MessageID = mailbox.NewID("msg", now)
	}
	if _, ok := sessiondb.ParseTimestamp(ev.Timestamp); !ok {
		ev.Timestamp = ""
	}
	if a := ne.ReplyTo; a != nil && a.ChannelType != "" && a.PlatformID != "" {
		ev.replyTo = &mailbox.Routing{ChannelType: a.ChannelType, PlatformID: a.PlatformID}
		if a.ThreadID != nil {
			ev.replyTo.ThreadID = *a.ThreadID
		}
	}
	compact, err := compactObject(ne.Message.Content)
	if err != nil {
		// Not a JSON object: NanoClaw takes the whole as the text.
		ev.Text = ne.Message.Content
		return ev
	}
	ev.raw = compact
	var o map[string]json.RawMessage
	_ = json.Unmarshal(compact, &o)
	str := func(o map[string]json.RawMessage, k string) *string {
		var s string
		if v := o[k]; len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil
		}
		return &s
	}
	var author map[string]json.RawMessage
	_ = json.Unmarshal(o["author"], &author)
	c := struct{ Text, SenderID, Sender, SenderName *string }{str(o, "text"), str(o, "senderId"), str(o, "sender"), str(o, "senderName")}
	var authorID, authorName *string
	if author != nil {
		authorID, authorName = str(author, "userId"), firstSet(str(author, "fullName"), str(author, "userName"))
	}
	ev.Text = deref(c.Text)
	ev.Sender.ID = deref(firstSet(c.SenderID, c.Sender, authorID))
	// Our chat shape names the sender in sender (senderId is the id), as
	// NanoClaw's own adapters do.
	name := firstSet(c.SenderName, authorName)
	if name == nil && c.SenderID != nil {
		name = c.Sender
	}
	ev.Sender.Name = deref(name)
	return ev
}

// compactObject is s compacted, when it is one JSON object.
func compactObject(s string) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return nil, err
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &o); err != nil || o == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "not a JSON object")
	}
	return b.Bytes(), nil
}

// firstSet is JavaScript's a ?? b ?? c over fields that are strings when
// present (NanoClaw keeps a field only when it is a string).
func firstSet(vs ...*string) *string {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
