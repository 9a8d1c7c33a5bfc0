package mailbox

import (
	"encoding/json"
	"time"
)

// Message kinds and status words, as stored (NanoClaw's values).
const (
	KindChat    = "chat"
	KindChatSDK = "chat-sdk"
	KindTask    = "task"
	KindWebhook = "webhook"
	KindSystem  = "system"

	StatusPending   = "pending"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusPaused    = "paused"

	AckProcessing = "processing"
	AckCompleted  = "completed"
	AckFailed     = "failed"

	DeliveredOK     = "delivered"
	DeliveredFailed = "failed"

	DestinationChannel = "channel"
	DestinationAgent   = "agent"

	// ChannelAgent is the channel_type of agent-to-agent and host
	// notification rows.
	ChannelAgent = "agent"
)

// Routing is a row's (channel_type, platform_id, thread_id). Empty strings
// are stored as NULL.
type Routing struct {
	ChannelType string `json:"channel_type,omitempty"`
	PlatformID  string `json:"platform_id,omitempty"`
	ThreadID    string `json:"thread_id,omitempty"`
}

// IsZero reports whether no field is set.
func (r Routing) IsZero() bool { return r == Routing{} }

// Destination is one row of inbound.db's destinations table: a name the
// agent may send to. Type is DestinationChannel (ChannelType, PlatformID,
// DisplayName set) or DestinationAgent (AgentGroupID set).
type Destination struct {
	Name         string `json:"name"`
	DisplayName  string `json:"display_name,omitempty"`
	Type         string `json:"type"`
	ChannelType  string `json:"channel_type,omitempty"`
	PlatformID   string `json:"platform_id,omitempty"`
	AgentGroupID string `json:"agent_group_id,omitempty"`
}

// InboundMessage is what the host enqueues into messages_in. ID and Kind are
// required; ID must be a safe name (it names the inbox/<id>/ folder).
// Content must be a JSON object; it is stored compact. Zero values give
// NanoClaw's defaults: status pending, trigger 1, on_wake 0, series_id = ID,
// timestamp = now, process_after NULL.
type InboundMessage struct {
	ID      string
	Kind    string
	Content json.RawMessage
	Routing Routing

	// Timestamp defaults to the host clock's now.
	Timestamp time.Time
	// ProcessAfter, when set, delays the row until then.
	ProcessAfter time.Time
	// Recurrence is a cron expression (tasks); validated when set.
	Recurrence string
	// SeriesID defaults to ID.
	SeriesID string
	// ContextOnly stores trigger=0: the row rides along as context but does
	// not wake the agent.
	ContextOnly bool
	// OnWake stores on_wake=1: only a fresh container's first poll sees it.
	OnWake bool
	// SourceSessionID is the return path of agent-to-agent messages.
	SourceSessionID string
}

// Task is a scheduled (kind='task') row: content {prompt, script}.
// ProcessAfter is the first run (zero = now); Recurrence a cron expression or
// empty for a one-shot task. ID defaults to task-<ms>-<rand6>.
type Task struct {
	ID           string
	Prompt       string
	Script       *string
	ProcessAfter time.Time
	Recurrence   string
	Routing      Routing
}

// TaskUpdate changes the live (pending or paused) rows of a task series.
// Nil fields are left alone. ProcessAfter and Recurrence are pointers to
// pointers' worth of meaning: set ClearProcessAfter / ClearRecurrence to
// store NULL.
type TaskUpdate struct {
	Prompt            *string
	Script            *string
	ClearScript       bool
	ProcessAfter      *time.Time
	ClearProcessAfter bool
	Recurrence        *string
	ClearRecurrence   bool
}

// InboundRow is one messages_in row as read back. Seq is 0 when NULL;
// Timestamp and ProcessAfter are the stored text.
type InboundRow struct {
	ID              string          `json:"id"`
	Seq             int64           `json:"seq"`
	Kind            string          `json:"kind"`
	Timestamp       string          `json:"timestamp"`
	Status          string          `json:"status"`
	ProcessAfter    string          `json:"process_after,omitempty"`
	Recurrence      string          `json:"recurrence,omitempty"`
	SeriesID        string          `json:"series_id,omitempty"`
	Tries           int             `json:"tries"`
	Trigger         bool            `json:"trigger"`
	Routing         Routing         `json:"routing"`
	Content         json.RawMessage `json:"content"`
	SourceSessionID string          `json:"source_session_id,omitempty"`
	OnWake          bool            `json:"on_wake"`
}

// OutboundMessage is what the agent sends into messages_out. Content must
// be a JSON object (see section 16 shapes); it is stored compact. Kind
// defaults to chat. ID defaults to msg-<ms>-<rand6> and must be a safe name.
// Files are paths of files to copy into outbox/<id>/ under their base names;
// the content should list those names in "files". Complete names inbound
// messages to ack completed in the same outbound commit as the row (see
// Agent.Send).
type OutboundMessage struct {
	ID           string
	Kind         string
	Content      json.RawMessage
	Routing      Routing
	InReplyTo    string
	DeliverAfter time.Time
	Recurrence   string
	Files        []string
	Complete     []string
}

// OutboundRow is one messages_out row as the host delivers it. Files are
// the outbox attachments, checked to lie inside the session folder.
type OutboundRow struct {
	ID           string          `json:"id"`
	Seq          int64           `json:"seq"`
	InReplyTo    string          `json:"in_reply_to,omitempty"`
	Timestamp    string          `json:"timestamp"`
	DeliverAfter string          `json:"deliver_after,omitempty"`
	Recurrence   string          `json:"recurrence,omitempty"`
	Kind         string          `json:"kind"`
	Routing      Routing         `json:"routing"`
	Content      json.RawMessage `json:"content"`
	Files        []OutboxFile    `json:"files,omitempty"`
}

// OutboxFile is one attachment of an outbound row: its name and the checked
// absolute path to read it from.
type OutboxFile struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Claim is one processing_ack row.
type Claim struct {
	MessageID     string `json:"message_id"`
	Status        string `json:"status"`
	StatusChanged string `json:"status_changed"`
}

// ContainerState is outbound.db's container_state row. A missing table or
// row reads as no tool in flight.
type ContainerState struct {
	CurrentTool           string `json:"current_tool,omitempty"`
	ToolDeclaredTimeoutMS int64  `json:"tool_declared_timeout_ms,omitempty"`
	ToolStartedAt         string `json:"tool_started_at,omitempty"`
	UpdatedAt             string `json:"updated_at,omitempty"`
}
