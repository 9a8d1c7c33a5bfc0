package hostd

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// HostDeliverer is the host's own part of delivery (contract section 10),
// in front of the channel deliverer:
//
//   - kind='system' rows go to the host action registry: schedule_task,
//     cancel_task, pause_task, resume_task and update_task act on the
//     session's inbound.db; any other action is logged and marked delivered
//     (the tasks of a control plane this host does not have);
//   - channel_type='agent' rows are agent-to-agent messages: written into
//     a session of the target agent group (Host.Forward), when the source
//     session's destinations allow it (own group always);
//   - everything else goes to Next; with no Next it stays pending
//     (mailbox.ErrNotReady): nothing is lost while no channel is configured.
type HostDeliverer struct {
	Host   *mailbox.Host
	Next   mailbox.Deliverer
	Logger *slog.Logger
}

// Deliver routes row; see HostDeliverer.
func (d *HostDeliverer) Deliver(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
	switch {
	case row.Kind == mailbox.KindSystem:
		return "", d.action(ctx, ref, row)
	case row.Routing.ChannelType == mailbox.ChannelAgent:
		return d.toAgent(ctx, ref, row)
	case d.Next == nil:
		return "", mailbox.ErrNotReady
	}
	return d.Next.Deliver(ctx, ref, row)
}

func (d *HostDeliverer) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return d.Host.Options().Logger
}

// systemAction is the union of the task actions' fields. Raw keeps which
// keys were present (update_task: absent = leave alone, null = clear).
type systemAction struct {
	Action       string  `json:"action"`
	TaskID       string  `json:"taskId"`
	Prompt       *string `json:"prompt"`
	Script       *string `json:"script"`
	ProcessAfter *string `json:"processAfter"`
	Recurrence   *string `json:"recurrence"`
	PlatformID   *string `json:"platformId"`
	ChannelType  *string `json:"channelType"`
	ThreadID     *string `json:"threadId"`
	raw          map[string]json.RawMessage
}

func (a systemAction) has(k string) bool { _, ok := a.raw[k]; return ok }

func (a systemAction) isNull(k string) bool { return string(a.raw[k]) == "null" }

// action runs one host action. Malformed input is a permanent failure:
// the agent is told, and the row is not retried.
func (d *HostDeliverer) action(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) error {
	var a systemAction
	if err := json.Unmarshal(row.Content, &a); err != nil {
		return mailbox.Permanent(sessiondb.Errorf(sessiondb.EINVALID, "system action: %v", err))
	}
	_ = json.Unmarshal(row.Content, &a.raw)
	bad := func(format string, args ...any) error {
		return mailbox.Permanent(sessiondb.Errorf(sessiondb.EINVALID, "%s: "+format, append([]any{a.Action}, args...)...))
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	h := d.Host
	switch a.Action {
	case "schedule_task":
		if a.TaskID == "" || str(a.Prompt) == "" {
			return bad("taskId and prompt are required")
		}
		t := mailbox.Task{ID: a.TaskID, Prompt: *a.Prompt, Script: a.Script, Recurrence: str(a.Recurrence),
			Routing: mailbox.Routing{ChannelType: str(a.ChannelType), PlatformID: str(a.PlatformID), ThreadID: str(a.ThreadID)}}
		if s := str(a.ProcessAfter); s != "" {
			at, err := mailbox.ParseTime(s)
			if err != nil {
				return bad("processAfter: %v", err)
			}
			t.ProcessAfter = at
		}
		_, _, err := h.EnqueueTask(ctx, ref, t)
		return d.actionErr(err)
	case "cancel_task", "pause_task", "resume_task":
		if a.TaskID == "" {
			return bad("taskId is required")
		}
		fn := map[string]func(context.Context, mailbox.SessionRef, string) (int, error){
			"cancel_task": h.CancelTask, "pause_task": h.PauseTask, "resume_task": h.ResumeTask}[a.Action]
		n, err := fn(ctx, ref, a.TaskID)
		if err == nil && n == 0 {
			d.logger().Info("mailbox: task action touched no rows", "session", ref.String(), "action", a.Action, "task", a.TaskID)
		}
		return d.actionErr(err)
	case "update_task":
		if a.TaskID == "" {
			return bad("taskId is required")
		}
		var u mailbox.TaskUpdate
		u.Prompt = a.Prompt
		if a.has("script") {
			u.Script, u.ClearScript = a.Script, a.isNull("script")
		}
		if a.has("processAfter") {
			if a.isNull("processAfter") {
				u.ClearProcessAfter = true
			} else {
				at, err := mailbox.ParseTime(str(a.ProcessAfter))
				if err != nil {
					return bad("processAfter: %v", err)
				}
				u.ProcessAfter = &at
			}
		}
		if a.has("recurrence") {
			u.Recurrence, u.ClearRecurrence = a.Recurrence, a.isNull("recurrence")
		}
		_, err := h.UpdateTask(ctx, ref, a.TaskID, u)
		return d.actionErr(err)
	}
	d.logger().Info("mailbox: system action not handled by this host; marked delivered", "session", ref.String(), "id", row.ID, "action", a.Action)
	return nil
}

// actionErr makes the agent's own mistakes (bad cron, bad ids) permanent;
// file trouble stays retryable.
func (d *HostDeliverer) actionErr(err error) error {
	if sessiondb.ErrorCode(err) == sessiondb.EINVALID {
		return mailbox.Permanent(err)
	}
	return err
}

// toAgent forwards an agent-to-agent row and returns the new inbound id.
func (d *HostDeliverer) toAgent(ctx context.Context, src mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
	h := d.Host
	target := row.Routing.PlatformID
	if err := mailbox.ValidateName("target agent group", target); err != nil {
		return "", mailbox.Permanent(err)
	}
	if target != src.AgentGroupID {
		ok, err := allowsAgent(ctx, h, src, target)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", mailbox.Permanent(sessiondb.Errorf(sessiondb.EINVALID, "agent group %q is not among this session's destinations", target))
		}
	}
	dst, err := agentTarget(ctx, h, src, row, target)
	if err != nil {
		return "", err
	}
	// The delivered row keeps no platform id for agent rows: the new
	// inbound id names a row of another session, not a platform message
	// the agent could edit.
	_, _, err = h.Forward(ctx, src, row, dst)
	return "", err
}

// allowsAgent reports whether the session's destinations hold
// ('agent', target).
func allowsAgent(ctx context.Context, h *mailbox.Host, ref mailbox.SessionRef, target string) (bool, error) {
	ds, err := h.Destinations(ctx, ref)
	if err != nil {
		return false, err
	}
	for _, d := range ds {
		if d.Type == mailbox.DestinationAgent && d.AgentGroupID == target {
			return true, nil
		}
	}
	return false, nil
}

// returnPath is the session an agent-to-agent row from session src to
// group target should go back to, as NanoClaw finds it: the
// source_session_id of the inbound row the reply answers (in_reply_to);
// when it names none (no in_reply_to, a chat message, a row not there),
// the source_session_id of the newest agent-to-agent row target sent src
// (peer affinity: the session of target that last talked to this one).
// "" when neither is known. The caller checks the session is target's
// and active: a return path to another group's session, or to one gone,
// falls to target's newest session, not to the peer's.
func returnPath(ctx context.Context, h *mailbox.Host, src mailbox.SessionRef, row mailbox.OutboundRow, target string) (string, error) {
	if row.InReplyTo != "" {
		in, err := h.InboundRow(ctx, src, row.InReplyTo)
		switch {
		case err == nil && in.SourceSessionID != "":
			return in.SourceSessionID, nil
		case err != nil && sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND:
			return "", err
		}
	}
	return h.PeerSource(ctx, src, target)
}

// agentTarget picks the session of group target that receives row: its
// return path (returnPath), when that session's folder is in target;
// else target's most recently written session; else a new one.
func agentTarget(ctx context.Context, h *mailbox.Host, src mailbox.SessionRef, row mailbox.OutboundRow, target string) (mailbox.SessionRef, error) {
	origin, err := returnPath(ctx, h, src, row, target)
	if err != nil {
		return mailbox.SessionRef{}, err
	}
	if origin != "" {
		ref := mailbox.SessionRef{AgentGroupID: target, SessionID: origin}
		if p, err := h.Layout().InboundPath(ref); err == nil {
			if _, err := os.Stat(p); err == nil {
				return ref, nil
			}
		}
	}
	refs, err := h.SessionFolders(ctx)
	if err != nil {
		return mailbox.SessionRef{}, err
	}
	var best mailbox.SessionRef
	var bestT int64 = -1
	for _, r := range refs {
		if r.AgentGroupID != target || r == src {
			continue
		}
		fi, err := os.Stat(filepath.Join(h.Layout().Root, r.AgentGroupID, r.SessionID, mailbox.InboundFile))
		if err != nil {
			continue
		}
		if t := fi.ModTime().UnixNano(); t > bestT {
			best, bestT = r, t
		}
	}
	if bestT >= 0 {
		return best, nil
	}
	ref := mailbox.SessionRef{AgentGroupID: target, SessionID: mailbox.NewID("sess", h.Now())}
	if err := h.InitSession(ctx, ref); err != nil {
		return mailbox.SessionRef{}, fmt.Errorf("create a session for agent group %s: %w", target, err)
	}
	return ref, nil
}
