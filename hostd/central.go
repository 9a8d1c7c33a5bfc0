package hostd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/mailbox"
)

// This file connects the daemon to the control plane: the deliverer that
// checks every send against the registry, the waker that writes a
// session's projections before its container starts, the expiry sweep and
// the registry's view of containers.

// centralDeliverer is the daemon's deliverer when it has a Router: every
// row a session's agent writes is checked against the registry (spec A8)
// before it goes anywhere, so an agent can only reach its own chat and the
// destinations its group holds now, whatever its projection says. A
// refusal fails the row at once (Permanent), and the drain tells the agent
// ("Delivery failed (seq N): ...").
//
// kind='system' rows needing an admin's approval (install_packages,
// add_mcp_server) start one; other system rows go to the HostDeliverer
// (the task actions). Agent-to-agent rows are forwarded to a session the
// registry picks. An ask_question card is recorded in pending_questions
// before it is sent, so its click finds it.
type centralDeliverer struct {
	r    *Router
	host *HostDeliverer
	next mailbox.Deliverer
}

func (d *centralDeliverer) Deliver(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
	if row.Kind == mailbox.KindSystem {
		if handled, err := d.r.systemAction(ctx, ref, row); handled {
			return "", err
		}
		return d.host.Deliver(ctx, ref, row)
	}
	s, err := d.r.registered(ctx, ref)
	if err != nil {
		return "", err
	}
	var chat *sessiondb.MessagingGroup
	if s.MessagingGroupID != "" {
		mg, err := d.r.reg.GetMessagingGroup(ctx, s.MessagingGroupID)
		switch {
		case err == nil:
			chat = &mg
		case sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND:
			return "", err
		}
	}
	dests, err := d.r.reg.ResolveDestinations(ctx, s.AgentGroupID)
	if err != nil {
		return "", err
	}
	dec := sessiondb.CheckDelivery(sessiondb.DeliveryRequest{AgentGroupID: s.AgentGroupID, SessionChat: chat,
		ChannelType: row.Routing.ChannelType, PlatformID: row.Routing.PlatformID, Destinations: dests})
	if !dec.Allowed {
		return "", mailbox.Permanent(refusal(row.Routing, dec))
	}
	if row.Routing.ChannelType == mailbox.ChannelAgent {
		return "", d.r.toAgent(ctx, s, row)
	}
	if err := d.r.recordQuestion(ctx, s, row); err != nil {
		return "", err
	}
	if d.next == nil {
		return "", mailbox.ErrNotReady
	}
	return d.next.Deliver(ctx, ref, row)
}

// refusal words a refused send for the agent's failure notification.
func refusal(to mailbox.Routing, dec sessiondb.DeliveryDecision) error {
	target := to.ChannelType + "/" + errtext.Clip(to.PlatformID, 64)
	if to.ChannelType == mailbox.ChannelAgent {
		target = "agent group " + errtext.Clip(to.PlatformID, 64)
	}
	switch dec.Reason {
	case sessiondb.DeliverNoRouting:
		return sessiondb.Errorf(sessiondb.EINVALID, "the message has no channel_type or platform_id")
	case sessiondb.DeliverDangling:
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "destination %q points at %s, which no longer exists", dec.Name, target)
	}
	return sessiondb.Errorf(sessiondb.EINVALID, "not allowed to send to %s: it is not this agent's chat nor among its destinations", target)
}

// registered returns the registry's row of the session ref, or a permanent
// error when the registry does not know it (a folder made by hand has no
// permissions to check).
func (r *Router) registered(ctx context.Context, ref mailbox.SessionRef) (sessiondb.AgentSession, error) {
	s, err := r.reg.GetAgentSession(ctx, ref.SessionID)
	switch {
	case sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND:
		return s, mailbox.Permanent(sessiondb.Errorf(sessiondb.ENOTFOUND, "session %s is not in the central registry", ref))
	case err != nil:
		return s, err
	case s.AgentGroupID != ref.AgentGroupID:
		return s, mailbox.Permanent(sessiondb.Errorf(sessiondb.EINVALID, "session %s belongs to agent group %s in the registry", ref, s.AgentGroupID))
	}
	return s, nil
}

// recordQuestion inserts the pending question of an ask_question card
// (spec A7.1): keyed by the card's questionId (the outbound row's id when
// it has none), with the row's routing and normalized options. A card
// without a title or options is sent unrecorded, as NanoClaw does.
func (r *Router) recordQuestion(ctx context.Context, s sessiondb.AgentSession, row mailbox.OutboundRow) error {
	if !strings.Contains(string(row.Content), `"ask_question"`) {
		return nil
	}
	c, err := mailbox.DecodeContent(row.Content)
	if err != nil || c.Type != "ask_question" {
		return nil
	}
	var title string
	_ = json.Unmarshal(c.Raw["title"], &title)
	opts, oerr := sessiondb.NormalizeOptions(c.Raw["options"])
	qid := c.QuestionID
	if qid == "" {
		qid = row.ID
	}
	q := sessiondb.NewQuestion{QuestionID: qid, SessionID: s.ID, MessageOutID: row.ID, ChannelType: row.Routing.ChannelType,
		PlatformID: row.Routing.PlatformID, ThreadID: row.Routing.ThreadID, Title: title, Options: opts}
	if oerr == nil {
		oerr = q.Validate()
	}
	if oerr != nil {
		r.log.Warn("router: ask_question card not recorded; its clicks will not reach the agent", "session", s.Ref().String(), "id", row.ID, "err", oerr)
		return nil
	}
	_, err = r.reg.AddQuestion(ctx, q)
	return err
}

// toAgent forwards an agent-to-agent row (the send was allowed) into a
// session of the target group (mailbox contract section 10), NanoClaw's
// pick (resolveTargetSession in src/modules/agent-to-agent/agent-route.ts):
// its return path (returnPath), when that session is active in the target
// group; else the group's newest active session, made when there is none.
func (r *Router) toAgent(ctx context.Context, src sessiondb.AgentSession, row mailbox.OutboundRow) error {
	target := row.Routing.PlatformID
	if _, err := r.reg.GetAgentGroup(ctx, target); err != nil {
		if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND {
			return mailbox.Permanent(err)
		}
		return err
	}
	var dst sessiondb.AgentSession
	found := false
	origin, err := returnPath(ctx, r.h, src.Ref(), row, target)
	if err != nil {
		return err
	}
	if origin != "" {
		s, err := r.reg.GetAgentSession(ctx, origin)
		if err == nil && s.AgentGroupID == target && s.Status == sessiondb.SessionActive {
			dst, found = s, true
		} else if err != nil && sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			return err
		}
	}
	created := false
	if !found {
		var err error
		dst, created, err = r.reg.ResolveSession(ctx, sessiondb.SessionLookup{AgentGroupID: target, Mode: sessiondb.ModeAgentShared})
		if err != nil {
			return err
		}
	}
	if l := r.cfg.Leases; l != nil {
		held, holder, err := l.Acquire(ctx, dst.ID)
		if err != nil {
			return err
		}
		if !held {
			m, err := forwardedMessage(src.Ref(), row, r.h.Now())
			if err != nil {
				return err
			}
			_, err = r.handOff(ctx, dst, m, true, holder)
			return err
		}
	}
	if err := r.ensureFolder(ctx, dst, created); err != nil {
		return err
	}
	if _, _, err := r.h.Forward(ctx, src.Ref(), row, dst.Ref()); err != nil {
		return err
	}
	if err := r.reg.TouchSession(ctx, dst.ID); err != nil {
		return err
	}
	r.wakeSession(ctx, dst.Ref())
	return nil
}

// forwardedMessage is the inbound row mailbox.Host.Forward writes, for a
// target session served by another host: the row's files travel as base64
// attachments, which that host's mailbox writes into the target's inbox/.
func forwardedMessage(src mailbox.SessionRef, row mailbox.OutboundRow, now time.Time) (mailbox.InboundMessage, error) {
	var o map[string]json.RawMessage
	if err := json.Unmarshal(row.Content, &o); err != nil || o == nil {
		return mailbox.InboundMessage{}, mailbox.Permanent(sessiondb.Errorf(sessiondb.EINVALID, "content: want a JSON object"))
	}
	if len(row.Files) > 0 {
		atts := make([]map[string]string, 0, len(row.Files))
		for _, f := range row.Files {
			data, err := os.ReadFile(f.Path)
			if err != nil {
				return mailbox.InboundMessage{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "read outbox file %s", f.Name)
			}
			atts = append(atts, map[string]string{"name": f.Name, "filename": f.Name, "type": "file", "data": base64.StdEncoding.EncodeToString(data)})
		}
		delete(o, "files")
		b, _ := json.Marshal(atts)
		o["attachments"] = b
	}
	content, err := json.Marshal(o)
	if err != nil {
		return mailbox.InboundMessage{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "forward %s", row.ID)
	}
	return mailbox.InboundMessage{ID: mailbox.NewID("msg", now), Kind: mailbox.KindChat, Content: content, Timestamp: now,
		Routing: mailbox.Routing{ChannelType: mailbox.ChannelAgent, PlatformID: src.AgentGroupID}, SourceSessionID: src.SessionID}, nil
}

// approvalActions are the system actions an admin must approve, with the
// card each gets.
var approvalActions = map[string]func(map[string]json.RawMessage) (title, question string){
	"install_packages": func(c map[string]json.RawMessage) (string, string) {
		var apt, npm []string
		var reason string
		_ = json.Unmarshal(c["apt"], &apt)
		_ = json.Unmarshal(c["npm"], &npm)
		_ = json.Unmarshal(c["reason"], &reason)
		q := "The agent asks to install packages"
		if len(apt) > 0 {
			q += "; apt: " + strings.Join(apt, ", ")
		}
		if len(npm) > 0 {
			q += "; npm: " + strings.Join(npm, ", ")
		}
		if reason != "" {
			q += ". Reason: " + reason
		}
		return "📦 Install packages", errtext.Clip(q, 2000)
	},
	"add_mcp_server": func(c map[string]json.RawMessage) (string, string) {
		var name, command string
		_ = json.Unmarshal(c["name"], &name)
		_ = json.Unmarshal(c["command"], &command)
		return "🔌 Add MCP server", errtext.Clip(fmt.Sprintf("The agent asks to add the MCP server %q (%s).", name, command), 2000)
	},
}

// systemAction starts an approval for the system actions that need one;
// handled is false for the others.
func (r *Router) systemAction(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (handled bool, err error) {
	c, err := mailbox.DecodeContent(row.Content)
	if err != nil {
		return false, nil // the HostDeliverer reports malformed content
	}
	card, ok := approvalActions[c.Action]
	if !ok {
		return false, nil
	}
	s, err := r.registered(ctx, ref)
	if err != nil {
		return true, err
	}
	title, question := card(c.Raw)
	_, err = r.RequestApproval(ctx, s, c.Action, row.Content, title, question)
	return true, err
}

// ExpiryResult counts one expiry sweep.
type ExpiryResult struct {
	Questions int `json:"questions"` // pending questions deleted (their agents stopped waiting)
	Approvals int `json:"approvals"` // action approvals marked expired
}

// Expire runs the card expiry sweeps (spec A7 [IMP]): questions older
// than QuestionTTL are deleted (a late click then gets "expired" and writes
// nothing); pending action approvals past their expires_at (or older than
// ApprovalTTL) are marked expired, their agents told, and their cards
// edited when the platform message is known. Telling one agent failing
// does not stop the others; the first failure is returned.
func (r *Router) Expire(ctx context.Context) (ExpiryResult, error) {
	var res ExpiryResult
	now := r.h.Now()
	qs, err := r.reg.ExpireQuestions(ctx, now.Add(-r.cfg.QuestionTTL))
	if err != nil {
		return res, err
	}
	res.Questions = len(qs)
	as, err := r.reg.ExpireApprovals(ctx, now, r.cfg.ApprovalTTL)
	if err != nil {
		return res, err
	}
	res.Approvals = len(as)
	var firstErr error
	for _, a := range as {
		if err := r.approvalExpired(ctx, a); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return res, firstErr
}

// ExpireApproval expires one pending action approval now (an admin's
// `approvals expire ID`): its agent is told and its card edited, as the
// sweep does. Unknown id: not_found; not pending: conflict.
func (r *Router) ExpireApproval(ctx context.Context, id string) (sessiondb.PendingApproval, error) {
	a, err := r.reg.ResolveApproval(ctx, id, sessiondb.ApprovalExpired)
	if err != nil {
		return a, err
	}
	return a, r.approvalExpired(ctx, a)
}

// ExpireQuestion withdraws one pending question now: its row is deleted,
// so a later click gets nothing (the agent's own wait times out). Unknown
// id: not_found.
func (r *Router) ExpireQuestion(ctx context.Context, id string) error {
	deleted, err := r.reg.DeleteQuestion(ctx, id)
	if err == nil && !deleted {
		err = sessiondb.NotFound("question", id)
	}
	return err
}

// approvalExpired tells an expired approval's agent and edits its card
// when the platform message is known (a card edit that fails is logged:
// the card only looks stale).
func (r *Router) approvalExpired(ctx context.Context, a sessiondb.PendingApproval) error {
	var err error
	if a.SessionID != "" {
		s, gerr := r.reg.GetAgentSession(ctx, a.SessionID)
		switch {
		case gerr == nil:
			err = r.notify(ctx, s, "Your "+a.Action+" request expired without an answer from an admin.")
		case sessiondb.ErrorCode(gerr) != sessiondb.ENOTFOUND:
			err = gerr
		}
	}
	if a.PlatformMessageID != "" && a.ChannelType != "" && a.PlatformID != "" && r.cfg.Deliverer != nil {
		content, cerr := mailbox.MarshalContent(map[string]string{"operation": "edit", "messageId": a.PlatformMessageID, "text": "Expired (no response)"})
		if cerr == nil {
			_, cerr = r.send(ctx, mailbox.SessionRef{AgentGroupID: a.AgentGroupID, SessionID: a.SessionID},
				mailbox.OutboundRow{ID: a.ApprovalID + "-expired", Kind: mailbox.KindChat,
					Routing: mailbox.Routing{ChannelType: a.ChannelType, PlatformID: a.PlatformID}, Content: content})
		}
		if cerr != nil {
			r.log.Warn("router: could not edit an expired approval's card", "id", a.ApprovalID, "err", cerr)
		}
	}
	return err
}

// spawnWaker is the daemon's waker when it has a Router: before the
// container of a session starts it writes the session's projections
// (session_routing and destinations, from the registry, with .heartbeat
// deleted: mailbox PrepareSpawn), and after it started it records the
// spawn in the registry (container_status running, last_active now). A
// session whose container already runs is left alone.
type spawnWaker struct {
	d    *Daemon
	r    *Router
	next Waker

	mu    sync.Mutex
	locks map[mailbox.SessionRef]*sync.Mutex
}

func (w *spawnWaker) lock(ref mailbox.SessionRef) func() {
	w.mu.Lock()
	l := w.locks[ref]
	if l == nil {
		l = &sync.Mutex{}
		w.locks[ref] = l
	}
	w.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (w *spawnWaker) Wake(ctx context.Context, ref mailbox.SessionRef) error {
	defer w.lock(ref)()
	if w.d.rt.Running(ref) {
		return nil
	}
	s, err := w.r.registered(ctx, ref)
	switch {
	case err == nil:
		sp, err := w.r.Projection(ctx, s)
		if err != nil {
			return err
		}
		if err := w.r.h.PrepareSpawn(ctx, ref, sp); err != nil {
			return err
		}
	case sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND:
		w.r.log.Warn("router: waking a session the registry does not know; it gets no projections", "session", ref.String())
	default:
		return err
	}
	if err := w.next.Wake(ctx, ref); err != nil {
		return err
	}
	w.d.containerStatus(ctx, ref, sessiondb.ContainerRunning)
	return nil
}

// containerTracker remembers the container status the daemon last wrote
// for each session, so the registry is written on changes only.
type containerTracker struct {
	mu    sync.Mutex
	known map[mailbox.SessionRef]sessiondb.ContainerStatus
}

// containerStatus records st for ref in the registry unless it is what
// was last recorded. A session the registry does not know is remembered
// as such and not asked about again.
func (d *Daemon) containerStatus(ctx context.Context, ref mailbox.SessionRef, st sessiondb.ContainerStatus) {
	r := d.cfg.Router
	if r == nil {
		return
	}
	t := &d.containers
	t.mu.Lock()
	prev, seen := t.known[ref]
	t.mu.Unlock()
	if prev == st || (!seen && st == sessiondb.ContainerStopped) {
		return
	}
	err := r.reg.SetContainerStatus(ctx, ref.SessionID, st)
	if err != nil && sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		d.log.Warn("router: could not record the container status", "session", ref.String(), "status", st, "err", err)
		return
	}
	t.mu.Lock()
	t.known[ref] = st
	t.mu.Unlock()
}
