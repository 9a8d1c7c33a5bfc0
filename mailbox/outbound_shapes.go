package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// The outbound shapes of the contract's section 16 that take more than a
// text: what NanoClaw's agent tools write (edit_message, add_reaction,
// ask_user_question, send_card, the scheduling tools, create_agent, the
// self-modification tools, ncl), built compact with their keys in the order
// those tools write them. Each returns a message ready for Agent.Send.

// Edit builds the edit of the message numbered seq (NanoClaw's
// edit_message): kind chat, {"operation":"edit","messageId":…,"text":…}
// with the target named as MessageIDBySeq names it, sent on that message's
// routing. An unknown seq is not_found; a message without a channel is
// invalid.
func (a *Agent) Edit(ctx context.Context, seq int64, text string) (OutboundMessage, error) {
	if text == "" {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "edit of #%d: the text is empty", seq)
	}
	return a.operation(ctx, seq, "edit", "text", text)
}

// React builds a reaction to the message numbered seq (NanoClaw's
// add_reaction): kind chat, {"operation":"reaction","messageId":…,
// "emoji":…}, emoji a shortcode such as thumbs_up.
func (a *Agent) React(ctx context.Context, seq int64, emoji string) (OutboundMessage, error) {
	if emoji == "" {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "reaction to #%d: the emoji is empty", seq)
	}
	return a.operation(ctx, seq, "reaction", "emoji", emoji)
}

func (a *Agent) operation(ctx context.Context, seq int64, op, key, value string) (OutboundMessage, error) {
	t, err := a.LookupSeq(ctx, seq)
	if err != nil {
		return OutboundMessage{}, err
	}
	if t.Routing.ChannelType == "" || t.Routing.PlatformID == "" {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "%s of #%d: that message has no channel to %s it on", op, seq, op)
	}
	o := newObject()
	o.set("operation", marshalCompact(op))
	o.set("messageId", marshalCompact(t.MessageID))
	o.set(key, marshalCompact(value))
	return OutboundMessage{Kind: KindChat, Content: o.marshal(), Routing: t.Routing}, nil
}

// QuestionOption is one answer of a question card. SelectedLabel (shown
// once chosen) and Value (what the agent gets back) default to Label.
type QuestionOption struct {
	Label         string `json:"label"`
	SelectedLabel string `json:"selectedLabel"`
	Value         string `json:"value"`
}

// Question builds a multiple-choice question card (NanoClaw's
// ask_user_question): kind chat-sdk, id = its questionId (id, or
// msg-<ms>-<rand6>), {"type":"ask_question","questionId","title",
// "question","options":[{label,selectedLabel,value}]}. The host answers it
// with a kind='system' row that AwaitQuestionResponse finds.
func Question(id, title, question string, options []QuestionOption, routing Routing, now time.Time) (OutboundMessage, error) {
	if title == "" || question == "" {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "question: title and question are required")
	}
	if len(options) == 0 {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "question: give at least one option")
	}
	opts := make([]QuestionOption, len(options))
	for i, op := range options {
		if op.Label == "" {
			return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "question: options[%d] has no label", i)
		}
		if op.SelectedLabel == "" {
			op.SelectedLabel = op.Label
		}
		if op.Value == "" {
			op.Value = op.Label
		}
		opts[i] = op
	}
	if id == "" {
		id = NewID("msg", now)
	}
	o := newObject()
	o.set("type", marshalCompact("ask_question"))
	o.set("questionId", marshalCompact(id))
	o.set("title", marshalCompact(title))
	o.set("question", marshalCompact(question))
	o.set("options", marshalCompact(opts))
	return OutboundMessage{ID: id, Kind: KindChatSDK, Content: o.marshal(), Routing: routing}, nil
}

// Card builds a card (NanoClaw's send_card): kind chat-sdk,
// {"type":"card","card":card,"fallbackText":…}; card is a JSON object
// {title, description?, children?, actions?}.
func Card(card json.RawMessage, fallbackText string, routing Routing) (OutboundMessage, error) {
	c, err := parseObject("card", card)
	if err != nil {
		return OutboundMessage{}, err
	}
	if c.str("title") == "" {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "card: a title is required")
	}
	o := newObject()
	o.set("type", marshalCompact("card"))
	o.set("card", c.marshal())
	o.set("fallbackText", marshalCompact(fallbackText))
	return OutboundMessage{Kind: KindChatSDK, Content: o.marshal(), Routing: routing}, nil
}

// Host actions (kind='system' rows) an agent may request.
const (
	ActionScheduleTask    = "schedule_task"
	ActionCancelTask      = "cancel_task"
	ActionPauseTask       = "pause_task"
	ActionResumeTask      = "resume_task"
	ActionUpdateTask      = "update_task"
	ActionCreateAgent     = "create_agent"
	ActionInstallPackages = "install_packages"
	ActionAddMCPServer    = "add_mcp_server"
	ActionCLIRequest      = "cli_request"
)

// ScheduleTaskAction builds the request to schedule t (NanoClaw's
// schedule_task): kind system, id = taskId (t.ID, or msg-<ms>-<rand6>),
// {"action":"schedule_task","taskId","prompt","script"|null,
// "processAfter","recurrence"|null,"platformId","channelType","threadId"},
// on t.Routing. processAfter (default now) is ISO text with a Z: the host
// stores it as the task's process_after, which NanoClaw's list_tasks sorts
// as raw text among the ISO values its own agent writes.
func ScheduleTaskAction(t Task, now time.Time) (OutboundMessage, error) {
	if t.Prompt == "" {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "schedule_task: the prompt is empty")
	}
	if t.Recurrence != "" {
		if _, err := ParseRecurrence(t.Recurrence); err != nil {
			return OutboundMessage{}, err
		}
	}
	if t.ID == "" {
		t.ID = NewID("msg", now)
	}
	if t.ProcessAfter.IsZero() {
		t.ProcessAfter = now
	}
	o := newObject()
	o.set("action", marshalCompact(ActionScheduleTask))
	o.set("taskId", marshalCompact(t.ID))
	o.set("prompt", marshalCompact(t.Prompt))
	o.set("script", orNull(t.Script))
	o.set("processAfter", marshalCompact(FormatTime(t.ProcessAfter)))
	o.set("recurrence", orNull(nonEmpty(t.Recurrence)))
	o.set("platformId", orNull(nonEmpty(t.Routing.PlatformID)))
	o.set("channelType", orNull(nonEmpty(t.Routing.ChannelType)))
	o.set("threadId", orNull(nonEmpty(t.Routing.ThreadID)))
	return OutboundMessage{ID: t.ID, Kind: KindSystem, Content: o.marshal(), Routing: t.Routing}, nil
}

// TaskAction builds cancel_task, pause_task or resume_task for the task
// series taskID: kind system, id sys-<ms>-<rand6>, {"action","taskId"}.
func TaskAction(action, taskID string, now time.Time) (OutboundMessage, error) {
	switch action {
	case ActionCancelTask, ActionPauseTask, ActionResumeTask:
	default:
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "task action %q: want cancel_task, pause_task or resume_task", errtext.Clip(action, 40))
	}
	if taskID == "" {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "%s: the task id is empty", action)
	}
	o := newObject()
	o.set("action", marshalCompact(action))
	o.set("taskId", marshalCompact(taskID))
	return OutboundMessage{ID: NewID("sys", now), Kind: KindSystem, Content: o.marshal()}, nil
}

// UpdateTaskAction builds update_task for the task series taskID: kind
// system, id sys-<ms>-<rand6>, {"action","taskId"} with prompt,
// processAfter (ISO), recurrence and script where u sets them (null where
// it clears them). At least one change is required.
func UpdateTaskAction(taskID string, u TaskUpdate, now time.Time) (OutboundMessage, error) {
	if taskID == "" {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "update_task: the task id is empty")
	}
	o := newObject()
	o.set("action", marshalCompact(ActionUpdateTask))
	o.set("taskId", marshalCompact(taskID))
	if u.Prompt != nil {
		o.set("prompt", marshalCompact(*u.Prompt))
	}
	switch {
	case u.ClearProcessAfter:
		o.set("processAfter", json.RawMessage("null"))
	case u.ProcessAfter != nil:
		o.set("processAfter", marshalCompact(FormatTime(*u.ProcessAfter)))
	}
	switch {
	case u.ClearRecurrence:
		o.set("recurrence", json.RawMessage("null"))
	case u.Recurrence != nil:
		if _, err := ParseRecurrence(*u.Recurrence); err != nil {
			return OutboundMessage{}, err
		}
		o.set("recurrence", marshalCompact(*u.Recurrence))
	}
	switch {
	case u.ClearScript:
		o.set("script", json.RawMessage("null"))
	case u.Script != nil:
		o.set("script", marshalCompact(*u.Script))
	}
	if len(o.keys) == 2 {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "update_task: nothing to change")
	}
	return OutboundMessage{ID: NewID("sys", now), Kind: KindSystem, Content: o.marshal()}, nil
}

// actionFields says, per other host action, its fields in NanoClaw's
// order: the JSON type each must have, whether it is required, and what an
// absent one becomes. requestId, where the action has one, defaults to the
// row's id.
var actionFields = map[string][]actionField{
	ActionCreateAgent:     {{"requestId", "string", false, ""}, {"name", "string", true, ""}, {"instructions", "string", false, "null"}},
	ActionInstallPackages: {{"apt", "strings", false, "[]"}, {"npm", "strings", false, "[]"}, {"reason", "string", false, `""`}},
	ActionAddMCPServer:    {{"name", "string", true, ""}, {"command", "string", true, ""}, {"args", "strings", false, "[]"}, {"env", "object", false, "{}"}},
	ActionCLIRequest:      {{"requestId", "string", false, ""}, {"command", "string", true, ""}, {"args", "any", false, "null"}},
}

type actionField struct {
	name, typ string
	required  bool
	absent    string // JSON for an absent field; "" = requestId (the row id)
}

// Action builds one of the other host actions — create_agent,
// install_packages, add_mcp_server or cli_request — from fields, a JSON
// object of its fields besides "action" (section 16 shapes): kind system,
// id = requestId where the action has one (default msg-<ms>-<rand6>),
// else msg-<ms>-<rand6>. A missing required field, a field of the wrong
// type or an unknown field is invalid, naming it.
func Action(action string, fields json.RawMessage, now time.Time) (OutboundMessage, error) {
	spec, ok := actionFields[action]
	if !ok {
		return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "action %q: want create_agent, install_packages, add_mcp_server or cli_request (the task actions have their own builders)",
			errtext.Clip(action, 40))
	}
	if len(bytes.TrimSpace(fields)) == 0 {
		fields = json.RawMessage("{}")
	}
	in, err := parseObject(action, fields)
	if err != nil {
		return OutboundMessage{}, err
	}
	known := map[string]bool{}
	for _, f := range spec {
		known[f.name] = true
	}
	for _, k := range in.keys {
		if !known[k] {
			return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "%s: unknown field %q", action, errtext.Clip(k, 40))
		}
	}
	id := NewID("msg", now)
	if rid := in.str("requestId"); rid != "" {
		id = rid
	}
	o := newObject()
	o.set("action", marshalCompact(action))
	for _, f := range spec {
		v, ok := in.get(f.name)
		switch {
		case !ok && f.required:
			return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "%s: %s is required", action, f.name)
		case !ok && f.absent == "":
			v = marshalCompact(id)
		case !ok:
			v = json.RawMessage(f.absent)
		}
		if err := checkJSONType(v, f.typ, f.required); err != nil {
			return OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "%s: %s %v", action, f.name, err)
		}
		o.set(f.name, v)
	}
	return OutboundMessage{ID: id, Kind: KindSystem, Content: o.marshal()}, nil
}

// checkJSONType checks v is a JSON value of typ: string (non-empty when
// required; null allowed when not), strings (an array of strings), object
// (of strings), any.
func checkJSONType(v json.RawMessage, typ string, required bool) error {
	if typ == "any" {
		return nil
	}
	if string(v) == "null" && !required && typ == "string" {
		return nil
	}
	var err error
	switch typ {
	case "string":
		var s string
		if err = json.Unmarshal(v, &s); err == nil && required && s == "" {
			return fmt.Errorf("is empty")
		}
	case "strings":
		var ss []string
		err = json.Unmarshal(v, &ss)
	case "object":
		var m map[string]string
		err = json.Unmarshal(v, &m)
	}
	if err != nil {
		return fmt.Errorf("must be a JSON %s", map[string]string{"string": "string", "strings": "array of strings", "object": "object of strings"}[typ])
	}
	return nil
}

func newObject() *object { return &object{vals: map[string]json.RawMessage{}} }

// orNull encodes *s, or null for nil.
func orNull(s *string) json.RawMessage {
	if s == nil {
		return json.RawMessage("null")
	}
	return marshalCompact(*s)
}

// nonEmpty is &s, or nil for "".
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
