package sessiondb

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// QuestionOption is one button of a card (spec A7): Label is shown,
// SelectedLabel replaces the card's text once clicked, Value is what the
// click answers.
type QuestionOption struct {
	Label         string `json:"label"`
	SelectedLabel string `json:"selectedLabel"`
	Value         string `json:"value"`
}

// NormalizeOptions reads a card's options as sent by an agent or stored by
// NanoClaw (spec A7): a JSON array whose items are strings ("x" →
// {x, x, x}) or objects with label and optional selectedLabel and value
// (defaulting to label). Anything else, or an item without a label, is
// invalid naming options[i].
func NormalizeOptions(raw json.RawMessage) ([]QuestionOption, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, Errorf(EINVALID, "options is not a JSON array: %v", err)
	}
	out := make([]QuestionOption, 0, len(items))
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err == nil {
			out = append(out, QuestionOption{Label: s, SelectedLabel: s, Value: s})
			continue
		}
		var o struct {
			Label         *string `json:"label"`
			SelectedLabel *string `json:"selectedLabel"`
			Value         *string `json:"value"`
		}
		if err := json.Unmarshal(it, &o); err != nil || o.Label == nil {
			return nil, Errorf(EINVALID, "options[%d] is neither a string nor an object with a string label", i)
		}
		q := QuestionOption{Label: *o.Label, SelectedLabel: *o.Label, Value: *o.Label}
		if o.SelectedLabel != nil {
			q.SelectedLabel = *o.SelectedLabel
		}
		if o.Value != nil {
			q.Value = *o.Value
		}
		out = append(out, q)
	}
	return out, nil
}

// CheckCard refuses a card without a title or options, or with text that
// is not plain; the error is invalid and names the field.
func CheckCard(title string, opts []QuestionOption) error {
	if err := checkText("title", title, true, MaxCardText); err != nil {
		return err
	}
	return checkOptions(opts)
}

// checkCardOrDefault is CheckCard for a card whose empty options mean
// the default buttons of its kind.
func checkCardOrDefault(title string, opts []QuestionOption) error {
	if len(opts) == 0 {
		return checkText("title", title, true, MaxCardText)
	}
	return CheckCard(title, opts)
}

// checkOptions refuses options a card cannot carry: none, or text that is
// not plain.
func checkOptions(opts []QuestionOption) error {
	if len(opts) == 0 {
		return Errorf(EINVALID, "options is empty: a card needs at least one button")
	}
	for i, o := range opts {
		for _, f := range []struct{ name, v string }{{"label", o.Label}, {"selectedLabel", o.SelectedLabel}, {"value", o.Value}} {
			if err := checkText(describeOption(i, f.name), f.v, f.name == "label", MaxCardText); err != nil {
				return err
			}
		}
	}
	return nil
}

func describeOption(i int, field string) string {
	return "options[" + strconv.Itoa(i) + "]." + field
}

// ApproveOptions and friends are the buttons NanoClaw's cards carry.
var (
	// ApproveRejectOptions are an action approval's buttons.
	ApproveRejectOptions = []QuestionOption{
		{Label: "Approve", SelectedLabel: "✅ Approved", Value: ApprovalApprove},
		{Label: "Reject", SelectedLabel: "❌ Rejected", Value: ApprovalReject},
	}
	// AllowDenyOptions are an unknown sender's buttons.
	AllowDenyOptions = []QuestionOption{
		{Label: "Allow", SelectedLabel: "✅ Allowed", Value: ApprovalApprove},
		{Label: "Deny", SelectedLabel: "❌ Denied", Value: ApprovalReject},
	}
)

// The values approval buttons answer.
const (
	ApprovalApprove = "approve"
	ApprovalReject  = "reject"
)

// Default time limits of pending cards (spec A7).
const (
	// QuestionTTL is how long an agent waits for a question's answer; older
	// question rows are deleted and late clicks get "expired".
	QuestionTTL = 300 * time.Second
	// ApprovalTTL is how long an action approval stays pending before it
	// is marked expired.
	ApprovalTTL = 7 * 24 * time.Hour
)

// PendingQuestion is an agent's ask_question card waiting for a click: a
// row of pending_questions. QuestionID is the outbound row's id.
type PendingQuestion struct {
	QuestionID   string           `json:"question_id"`
	SessionID    string           `json:"session_id"`
	MessageOutID string           `json:"message_out_id"`
	ChannelType  string           `json:"channel_type,omitempty"`
	PlatformID   string           `json:"platform_id,omitempty"`
	ThreadID     string           `json:"thread_id,omitempty"`
	Title        string           `json:"title"`
	Options      []QuestionOption `json:"options"`
	CreatedAt    time.Time        `json:"created_at"`
}

// Expired reports whether the question is older than ttl at now.
func (q PendingQuestion) Expired(now time.Time, ttl time.Duration) bool {
	return !now.Before(q.CreatedAt.Add(ttl))
}

// NewQuestion is the input of AddQuestion; MessageOutID defaults to
// QuestionID.
type NewQuestion struct {
	QuestionID   string
	SessionID    string
	MessageOutID string
	ChannelType  string
	PlatformID   string
	ThreadID     string
	Title        string
	Options      []QuestionOption
}

// Validate checks n: ids safe names, a title, at least one option with
// plain text. The error is invalid and names the field.
func (n NewQuestion) Validate() error {
	return firstError(
		checkID("question_id", n.QuestionID, true),
		checkID("session_id", n.SessionID, true),
		checkID("message_out_id", n.MessageOutID, false),
		CheckCard(n.Title, n.Options),
	)
}

// ApprovalStatus is an action approval's state.
type ApprovalStatus string

const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
	ApprovalExpired  ApprovalStatus = "expired"
)

// Validate refuses a word other than the four statuses.
func (s ApprovalStatus) Validate() error {
	return checkWord("status", s, ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalExpired)
}

// ActionCredential is the action of OneCLI credential approvals, whose
// rows may have no session (spec A7.5).
const ActionCredential = "onecli_credential"

// PendingApproval is an action approval (spec A7.2, A7.5): a row of
// pending_approvals. Payload is the stored JSON text. AgentGroupID records
// whose admins may click (sessiondb always sets it; NanoClaw left it NULL
// for action approvals). ChannelType, PlatformID and PlatformMessageID
// locate the card once sent, so it can be edited on expiry.
type PendingApproval struct {
	ApprovalID        string           `json:"approval_id"`
	SessionID         string           `json:"session_id,omitempty"`
	RequestID         string           `json:"request_id"`
	Action            string           `json:"action"`
	Payload           json.RawMessage  `json:"payload"`
	AgentGroupID      string           `json:"agent_group_id,omitempty"`
	ChannelType       string           `json:"channel_type,omitempty"`
	PlatformID        string           `json:"platform_id,omitempty"`
	PlatformMessageID string           `json:"platform_message_id,omitempty"`
	ExpiresAt         time.Time        `json:"expires_at,omitzero"`
	Status            ApprovalStatus   `json:"status"`
	Title             string           `json:"title"`
	Options           []QuestionOption `json:"options"`
	CreatedAt         time.Time        `json:"created_at"`
}

// NewApproval is the input of AddApproval. An empty ApprovalID gets
// "appr-<ms>-<rand6>"; RequestID defaults to the approval id; empty
// Options are Approve/Reject; a zero ExpiresAt is created_at + ApprovalTTL.
type NewApproval struct {
	ApprovalID        string
	SessionID         string
	RequestID         string
	Action            string
	Payload           json.RawMessage
	AgentGroupID      string
	ChannelType       string
	PlatformID        string
	PlatformMessageID string
	ExpiresAt         time.Time
	Title             string
	Options           []QuestionOption
}

// Validate checks n: an action, a JSON payload, a title, ids safe names,
// and a session unless the action is a credential approval. The error is
// invalid and names the field.
func (n NewApproval) Validate() error {
	return firstError(
		checkID("approval_id", n.ApprovalID, false),
		checkID("session_id", n.SessionID, n.Action != ActionCredential),
		checkText("request_id", n.RequestID, false, MaxPlatformID),
		checkText("action", n.Action, true, MaxNameText),
		checkJSON("payload", n.Payload),
		checkID("agent_group_id", n.AgentGroupID, false),
		checkCardOrDefault(n.Title, n.Options),
	)
}

func checkJSON(field string, v json.RawMessage) error {
	switch {
	case len(v) == 0:
		return Errorf(EINVALID, "%s is empty", field)
	case len(v) > MaxPayloadBytes:
		return Errorf(EINVALID, "%s is %d bytes, the limit is %d", field, len(v), MaxPayloadBytes)
	case !json.Valid(v):
		return Errorf(EINVALID, "%s is not valid JSON", field)
	}
	return nil
}

// ApprovalFilter selects action approvals; empty fields do not filter.
// Listings are ordered by created_at, then id; Limit 0 means 100.
type ApprovalFilter struct {
	Status       ApprovalStatus
	Action       string
	AgentGroupID string
	SessionID    string
	Limit        int
}

// Validate checks the status word and the limit; the error is invalid and
// names the field.
func (f ApprovalFilter) Validate() error {
	return firstError(unlessEmpty(f.Status, f.Status.Validate), CheckWindow(f.Limit, 0))
}

// PendingSenderApproval asks an approver whether an unknown sender may talk
// to an agent group (spec A7.3): a row of pending_sender_approvals, unique
// by (MessagingGroupID, SenderIdentity). OriginalMessage is the inbound
// event's JSON, routed again on approval.
type PendingSenderApproval struct {
	ID               string           `json:"id"`
	MessagingGroupID string           `json:"messaging_group_id"`
	AgentGroupID     string           `json:"agent_group_id"`
	SenderIdentity   string           `json:"sender_identity"`
	SenderName       string           `json:"sender_name,omitempty"`
	OriginalMessage  json.RawMessage  `json:"original_message"`
	ApproverUserID   string           `json:"approver_user_id"`
	Title            string           `json:"title"`
	Options          []QuestionOption `json:"options"`
	CreatedAt        time.Time        `json:"created_at"`
}

// NewSenderApproval is the input of AddSenderApproval. An empty ID gets
// "nsa-<ms>-<rand6>"; empty Options are Allow/Deny.
type NewSenderApproval struct {
	ID               string
	MessagingGroupID string
	AgentGroupID     string
	SenderIdentity   string
	SenderName       string
	OriginalMessage  json.RawMessage
	ApproverUserID   string
	Title            string
	Options          []QuestionOption
}

// Validate checks n's ids, the sender and approver user ids, the event
// JSON and the card text. The error is invalid and names the field.
func (n NewSenderApproval) Validate() error {
	return firstError(
		checkID("id", n.ID, false),
		checkID("messaging_group_id", n.MessagingGroupID, true),
		checkID("agent_group_id", n.AgentGroupID, true),
		CheckUserID("sender_identity", n.SenderIdentity),
		checkText("sender_name", n.SenderName, false, MaxNameText),
		checkJSON("original_message", n.OriginalMessage),
		CheckUserID("approver_user_id", n.ApproverUserID),
		checkCardOrDefault(n.Title, n.Options),
	)
}

// PendingChannelApproval asks an approver what to do with a chat that
// mentioned the bot without being wired (spec A7.4): a row of
// pending_channel_approvals, one per chat. AgentGroupID is the group the
// approvers were picked for (the first by name).
type PendingChannelApproval struct {
	MessagingGroupID string           `json:"messaging_group_id"`
	AgentGroupID     string           `json:"agent_group_id"`
	OriginalMessage  json.RawMessage  `json:"original_message"`
	ApproverUserID   string           `json:"approver_user_id"`
	Title            string           `json:"title"`
	Options          []QuestionOption `json:"options"`
	CreatedAt        time.Time        `json:"created_at"`
}

// Validate checks p as the input of AddChannelApproval (CreatedAt is
// ignored; the store sets it). The error is invalid and names the field.
func (p PendingChannelApproval) Validate() error {
	return firstError(
		checkID("messaging_group_id", p.MessagingGroupID, true),
		checkID("agent_group_id", p.AgentGroupID, true),
		checkJSON("original_message", p.OriginalMessage),
		CheckUserID("approver_user_id", p.ApproverUserID),
		CheckCard(p.Title, p.Options),
	)
}

// CardKind says which kind of pending row a clicked card belongs to.
type CardKind string

// The kinds, in the order a click is offered to them (spec A7).
const (
	CardSenderApproval  CardKind = "sender_approval"
	CardChannelApproval CardKind = "channel_approval"
	CardActionApproval  CardKind = "action_approval"
	CardQuestion        CardKind = "question"
)

// Card is the pending row a click's id names; exactly one of the pointers
// is set, matching Kind.
type Card struct {
	Kind     CardKind                `json:"kind"`
	Sender   *PendingSenderApproval  `json:"sender,omitempty"`
	Channel  *PendingChannelApproval `json:"channel,omitempty"`
	Action   *PendingApproval        `json:"action,omitempty"`
	Question *PendingQuestion        `json:"question,omitempty"`
}

// ApprovalService keeps what waits for a human: agent questions and the
// three kinds of approval.
type ApprovalService interface {
	// FindCard returns the pending row whose id is the clicked card's id,
	// looking in the order clicks are offered: sender approvals, channel
	// approvals (keyed by chat id), action approvals, questions. None:
	// not_found.
	FindCard(ctx context.Context, id string) (Card, error)

	// AddQuestion records a delivered ask_question card (created_at =
	// now) unless one with that id exists (INSERT OR IGNORE: a redelivery
	// keeps the first); added says which. Unknown session: not_found.
	AddQuestion(ctx context.Context, n NewQuestion) (added bool, err error)
	// GetQuestion returns the question or not_found.
	GetQuestion(ctx context.Context, id string) (PendingQuestion, error)
	// ListQuestions returns the pending questions of a session ("" = all)
	// oldest first.
	ListQuestions(ctx context.Context, sessionID string) ([]PendingQuestion, error)
	// DeleteQuestion removes the question and reports whether it was there
	// (a click claims a question by deleting it; only one click wins).
	DeleteQuestion(ctx context.Context, id string) (bool, error)
	// ExpireQuestions deletes the questions created before cutoff and
	// returns them.
	ExpireQuestions(ctx context.Context, cutoff time.Time) ([]PendingQuestion, error)

	// AddApproval inserts a pending action approval (created_at = now).
	// A taken id is a conflict; an unknown session or agent group is
	// not_found.
	AddApproval(ctx context.Context, n NewApproval) (PendingApproval, error)
	// GetApproval returns the approval or not_found.
	GetApproval(ctx context.Context, id string) (PendingApproval, error)
	// ListApprovals returns the approvals f selects.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]PendingApproval, error)
	// SetApprovalCard records where the card was sent (channel type,
	// platform id, platform message id) so it can be edited later.
	// Unknown id: not_found.
	SetApprovalCard(ctx context.Context, id, channelType, platformID, platformMessageID string) error
	// ResolveApproval moves a pending approval to st (approved, rejected
	// or expired) and returns the row as it now is. Only a pending row
	// moves: a row already resolved is a conflict (two clicks, or a click
	// racing the expiry sweep: one wins). Unknown id: not_found.
	ResolveApproval(ctx context.Context, id string, st ApprovalStatus) (PendingApproval, error)
	// DeleteApproval removes the row and reports whether it was there.
	DeleteApproval(ctx context.Context, id string) (bool, error)
	// ExpireApprovals marks expired every pending approval whose
	// expires_at is at or before now (or, without one, whose created_at is
	// at or before now - ttl) and returns them, so the caller can tell
	// the agent and edit the card.
	ExpireApprovals(ctx context.Context, now time.Time, ttl time.Duration) ([]PendingApproval, error)

	// AddSenderApproval inserts the request unless one is pending for
	// (chat, sender); it returns the pending row either way and whether it
	// added it. Unknown chat or agent group: not_found.
	AddSenderApproval(ctx context.Context, n NewSenderApproval) (PendingSenderApproval, bool, error)
	// GetSenderApproval returns the request or not_found.
	GetSenderApproval(ctx context.Context, id string) (PendingSenderApproval, error)
	// ListSenderApprovals returns the pending requests of a chat ("" =
	// all) oldest first.
	ListSenderApprovals(ctx context.Context, messagingGroupID string) ([]PendingSenderApproval, error)
	// DeleteSenderApproval removes the request and reports whether it was
	// there.
	DeleteSenderApproval(ctx context.Context, id string) (bool, error)

	// AddChannelApproval inserts the request unless the chat has one
	// pending; it returns the pending row either way and whether it added
	// it. Unknown chat or agent group: not_found.
	AddChannelApproval(ctx context.Context, p PendingChannelApproval) (PendingChannelApproval, bool, error)
	// GetChannelApproval returns the chat's request or not_found.
	GetChannelApproval(ctx context.Context, messagingGroupID string) (PendingChannelApproval, error)
	// ListChannelApprovals returns every pending request oldest first.
	ListChannelApprovals(ctx context.Context) ([]PendingChannelApproval, error)
	// UpdateChannelApprovalCard replaces the card's title and options (the
	// follow-up "choose an agent" card). Unknown chat: not_found.
	UpdateChannelApprovalCard(ctx context.Context, messagingGroupID, title string, options []QuestionOption) error
	// DeleteChannelApproval removes the chat's request and reports whether
	// it was there.
	DeleteChannelApproval(ctx context.Context, messagingGroupID string) (bool, error)
}
