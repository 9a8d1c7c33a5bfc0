package hostd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// RouterConfig configures a Router. Registry and Host are required.
type RouterConfig struct {
	// Registry is the central registry (NanoClaw's data/v2.db).
	Registry sessiondb.Registry
	// Host writes the session mailboxes under the data root.
	Host *mailbox.Host
	// Deliverer sends the host's own cards (approval requests) and card
	// edits, straight to a chat: the same channel deliverer the daemon
	// drains agents' messages through. Nil: no card can be sent, so no
	// approval is asked for (and the agent is told, for action approvals).
	Deliverer mailbox.Deliverer
	// DMs finds users' direct-message chats for approval cards; nil is
	// DirectDMs (the handle on channels where it is the DM chat; none on
	// those that need a DM opened).
	DMs sessiondb.DMOpener
	// Waker wakes a session after the router wrote it a triggering row.
	// Nil: the router wakes nobody (a running daemon's sweep sees the new
	// row and wakes the session itself). A Daemon sets its own.
	Waker Waker
	// Actions apply approved action requests, by action name
	// (install_packages, add_mcp_server, ...). An approved action without a
	// handler is reported to the agent as approved but not applied.
	Actions map[string]ActionHandler
	// QuestionTTL and ApprovalTTL bound how long cards wait (defaults
	// sessiondb.QuestionTTL and sessiondb.ApprovalTTL).
	QuestionTTL, ApprovalTTL time.Duration
	// ReprojectWorkers is how many session folders a re-projection writes
	// at once; default 4.
	ReprojectWorkers int
	// Logger receives the router's logs; nil is the Host's logger.
	Logger *slog.Logger
	// Leases shares the sessions with the other host daemons of a
	// registry that has sessiondb.HostLeaseService (PostgreSQL): each
	// event is routed by the first host to claim it, and a row for a
	// session another host serves is handed off to that host through the
	// registry. Nil: this host serves every session (one host per
	// registry).
	Leases *Leases
	// Observer, when set, is told each event routed through the endpoint
	// (the host command's metrics).
	Observer Observer
}

// ActionHandler applies an approved action request of a session (spec
// A7.2). What it returns is told to the agent; an error is told as the
// failure to apply.
type ActionHandler func(ctx context.Context, s sessiondb.AgentSession, payload json.RawMessage) (note string, err error)

// Router is the control plane's entry point (spec A4-A9): it takes inbound
// events and card clicks from the channel adapters, decides through the
// registry who gets them, writes the session mailboxes and wakes the
// sessions; it asks approvers about unknown senders and chats, and it keeps
// the sessions' destinations and session_routing projections in step with
// the registry. It is safe for concurrent use, in one process or several
// over the same files (the registry's resolver and the mailbox writes hold
// their own locks).
type Router struct {
	reg  sessiondb.Registry
	h    *mailbox.Host
	cfg  RouterConfig
	dms  sessiondb.DMOpener
	log  *slog.Logger
	mu   sync.Mutex
	wake Waker
}

// NewRouter checks cfg and returns a router.
func NewRouter(cfg RouterConfig) (*Router, error) {
	if cfg.Registry == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "router: RouterConfig.Registry is required")
	}
	if cfg.Host == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "router: RouterConfig.Host is required")
	}
	cfg.QuestionTTL = positiveOr(cfg.QuestionTTL, sessiondb.QuestionTTL)
	cfg.ApprovalTTL = positiveOr(cfg.ApprovalTTL, sessiondb.ApprovalTTL)
	cfg.ReprojectWorkers = positiveOr(cfg.ReprojectWorkers, 4)
	r := &Router{reg: cfg.Registry, h: cfg.Host, cfg: cfg, dms: cfg.DMs, log: cfg.Logger, wake: cfg.Waker}
	if r.dms == nil {
		r.dms = DirectDMs{}
	}
	if r.log == nil {
		r.log = cfg.Host.Options().Logger
	}
	return r, nil
}

// Registry returns the router's registry.
func (r *Router) Registry() sessiondb.Registry { return r.reg }

// Host returns the router's mailbox host.
func (r *Router) Host() *mailbox.Host { return r.h }

// setWaker replaces the waker (the daemon installs its own).
func (r *Router) setWaker(w Waker) {
	r.mu.Lock()
	r.wake = w
	r.mu.Unlock()
}

func (r *Router) waker() Waker {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wake
}

// The outcomes of RouteResult.
const (
	RouteRouted    = "routed"    // some wiring wrote the message into a session now
	RouteDuplicate = "duplicate" // wirings took it, but every row was already there (a redelivered event); nothing written
	RouteFailed    = "failed"    // wirings took it, but no row could be written (the error says why)
	RouteDropped   = "dropped"   // no wiring took it; the drop is in the audit
	RouteIgnored   = "ignored"   // nothing recorded (spec A4: silent cases)
	RouteFiltered  = "filtered"  // the command gate dropped it for every wiring that took it; nothing written or audited
	RouteDenied    = "denied"    // the command gate refused an admin command (Reason) from a sender without admin privilege; the chat was told
)

// RouteResult is what the router did with one event.
type RouteResult struct {
	MessageID        string `json:"message_id"`
	MessagingGroupID string `json:"messaging_group_id,omitempty"`
	// ChatCreated says the router registered the chat (an unknown chat
	// that mentioned the bot).
	ChatCreated bool `json:"chat_created,omitempty"`
	// Outcome is routed, duplicate, failed, dropped, ignored, filtered or
	// denied; Reason is the drop reason (the audit's), why the event was
	// ignored (not_mentioned, denied), whose duplicate it is
	// (already_stored: the mailbox rows were there; already_routed:
	// another host took it), or the command the gate stopped.
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	// Deliveries are the wirings' decisions, in evaluation order.
	Deliveries []Delivery `json:"deliveries,omitempty"`
	// ApprovalID is the sender or channel approval the event is waiting
	// on (asked now, or already pending).
	ApprovalID string `json:"approval_id,omitempty"`
	// Warnings are problems that did not stop the event: a wiring's
	// pattern Go cannot compile (it engaged, failing open), an approval
	// card that could not be sent, a wake that failed.
	Warnings []string `json:"warnings,omitempty"`
}

// Delivery is one wiring's part in routing an event.
type Delivery struct {
	WiringID     string            `json:"wiring_id"`
	AgentGroupID string            `json:"agent_group_id"`
	Outcome      sessiondb.Outcome `json:"outcome"`
	// Reason says why the wiring dropped it: not_engaged, or the gate's
	// refusal (not_member, unknown_user, sender_scope_..., ...).
	Reason         string `json:"reason,omitempty"`
	SessionID      string `json:"session_id,omitempty"`
	SessionCreated bool   `json:"session_created,omitempty"`
	InboundID      string `json:"inbound_id,omitempty"`
	Seq            int64  `json:"seq,omitempty"`
	// Written says the row was written now (or handed off to the host
	// serving the session); Duplicate says it was already there (a
	// redelivered event). Neither: the write failed (Error).
	Written   bool `json:"written,omitempty"`
	Duplicate bool `json:"duplicate,omitempty"`
	// HandedOff names the host serving the session, to which the row was
	// handed off through the registry (several hosts, one registry);
	// "next" when this process cannot name one (it is stopping, or serves
	// no session: route --direct): the host serving the session, or the
	// next to claim it, takes the row.
	HandedOff string `json:"handed_off,omitempty"`
	Woken     bool   `json:"woken,omitempty"`
	// CommandGate is the command gate's verdict when it stopped the
	// message for this wiring (filtered or denied; nothing was written),
	// and Command the command it stopped.
	CommandGate string `json:"command_gate,omitempty"`
	Command     string `json:"command,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Route routes one chat message (spec A4): unknown-chat handling, the
// sender's user row, each wiring by priority (engage decision, access and
// sender-scope gates), the session resolver, the command gate (a filtered
// command is not written; an admin command from a sender without admin
// privilege over the wiring's group is not written and the chat is told
// so), the mailbox row (trigger 1 when engaged, 0 when kept as context;
// its id is InboundID's) and the wake; then one audit record when no wiring took it, and an approval
// request when the chat asks about unknown senders. The outcome is routed
// only when a row was written now: a redelivered event whose rows are all
// there is a duplicate. Wirings are
// handled independently: one failing does not stop the others, and the
// first failure is returned with the full result. Invalid events are
// refused before anything is written, naming the field.
func (r *Router) Route(ctx context.Context, ev Event) (RouteResult, error) {
	res := RouteResult{MessageID: ev.MessageID}
	if err := ev.Validate(); err != nil {
		return res, sessiondb.Wrap(sessiondb.EINVALID, err, "event")
	}
	if l := r.cfg.Leases; l != nil {
		first, err := l.ClaimEvent(ctx, ev.key())
		if err != nil {
			return res, err
		}
		if !first {
			res.Outcome, res.Reason = RouteDuplicate, "already_routed"
			return res, nil
		}
	}
	reg := r.reg
	mention := ev.Mentioned()
	mg, err := reg.FindMessagingGroup(ctx, ev.ChannelType, ev.PlatformID)
	switch {
	case sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND:
		if !mention {
			res.Outcome, res.Reason = RouteIgnored, "not_mentioned"
			return res, nil
		}
		mg, res.ChatCreated, err = reg.EnsureMessagingGroup(ctx, sessiondb.NewMessagingGroup{ChannelType: ev.ChannelType,
			PlatformID: ev.PlatformID, Name: ev.ChatName, IsGroup: ev.IsGroup, UnknownSenderPolicy: sessiondb.PolicyRequestApproval})
		if err != nil {
			return res, err
		}
	case err != nil:
		return res, err
	}
	res.MessagingGroupID = mg.ID
	wirings, err := reg.ListWirings(ctx, sessiondb.WiringFilter{MessagingGroupID: mg.ID})
	if err != nil {
		return res, err
	}
	if len(wirings) == 0 {
		switch {
		case !mention:
			res.Outcome, res.Reason = RouteIgnored, "not_mentioned"
		case mg.Denied():
			res.Outcome, res.Reason = RouteIgnored, "denied"
		default:
			// The bot was addressed and an approver is asked about the
			// chat: the sender gets a users row, as NanoClaw's router
			// gives one (chatter it ignores records nobody: see
			// docs/control-plane.md, where we differ).
			userID := ev.UserID()
			if userID != "" {
				if _, _, err := reg.EnsureUser(ctx, sessiondb.NewUser{ID: userID, Kind: ev.ChannelType, DisplayName: ev.Sender.Name}); err != nil {
					return res, err
				}
			}
			res.Outcome, res.Reason = RouteDropped, string(sessiondb.DropNoAgentWired)
			if err := reg.RecordDroppedMessage(ctx, sessiondb.DroppedMessage{ChannelType: ev.ChannelType, PlatformID: ev.PlatformID,
				UserID: userID, SenderName: ev.Sender.Name, Reason: sessiondb.DropNoAgentWired, MessagingGroupID: mg.ID}); err != nil {
				return res, err
			}
			id, err := r.requestChannelApproval(ctx, mg, ev)
			res.ApprovalID = id
			if err != nil {
				res.Warnings = append(res.Warnings, "channel approval: "+err.Error())
			}
		}
		return res, nil
	}

	userID := ev.UserID()
	access := sessiondb.UserAccess{}
	if userID != "" {
		if _, _, err := reg.EnsureUser(ctx, sessiondb.NewUser{ID: userID, Kind: ev.ChannelType, DisplayName: ev.Sender.Name}); err != nil {
			return res, err
		}
		if access, err = reg.UserAccess(ctx, userID); err != nil {
			return res, err
		}
	}
	content, err := ev.content()
	if err != nil {
		return res, sessiondb.Wrap(sessiondb.EINVALID, err, "event")
	}
	var firstErr error
	answered := false
	decisions := make([]sessiondb.EngageDecision, 0, len(wirings))
	for _, w := range wirings {
		in := sessiondb.EngageInput{Wiring: w, Chat: mg, Text: ev.Text, IsMention: mention, Sender: access}
		if sessiondb.NeedsActiveSession(w, mg, mention) {
			// NanoClaw's sticky test: the event's own thread, or the
			// chat's shared session when there is none.
			_, found, err := reg.FindActiveSession(ctx, sessiondb.SessionLookup{AgentGroupID: w.AgentGroupID,
				MessagingGroupID: mg.ID, ThreadID: ev.ThreadID, Mode: sessiondb.ModePerThread})
			if err != nil {
				return res, err
			}
			in.ActiveSession = found
		}
		d := sessiondb.DecideEngage(in)
		decisions = append(decisions, d)
		if d.PatternErr != nil {
			res.Warnings = append(res.Warnings, "wiring "+w.ID+": "+d.PatternErr.Error())
			r.log.Warn("router: engage pattern does not compile; the wiring engages on every message", "wiring", w.ID, "err", d.PatternErr)
		}
		del := Delivery{WiringID: w.ID, AgentGroupID: w.AgentGroupID, Outcome: d.Outcome}
		if d.Outcome == sessiondb.OutcomeDrop {
			del.Reason = dropReason(d)
			res.Deliveries = append(res.Deliveries, del)
			continue
		}
		mode := sessiondb.EffectiveSessionMode(w, mg, ev.ThreadID != "")
		if err := r.deliver(ctx, mg, ev, content, access, mode, &del); err != nil {
			del.Error = err.Error()
			if firstErr == nil {
				firstErr = err
			}
			r.log.Warn("router: delivery to agent group failed", "message", ev.MessageID, "agent_group", w.AgentGroupID, "err", err)
		}
		if del.CommandGate == CommandDenied && !answered {
			// The chat is told once, however many wirings refused; the
			// command is refused whether or not the answer can be sent.
			answered = true
			if err := r.deny(ctx, sessiondb.SessionRef{AgentGroupID: del.AgentGroupID, SessionID: del.SessionID}, ev, del.Command); err != nil {
				res.Warnings = append(res.Warnings, "wiring "+w.ID+": "+del.Command+" denied, but the answer was not sent: "+err.Error())
				r.log.Warn("router: could not answer a denied command", "message", ev.MessageID, "agent_group", w.AgentGroupID, "command", del.Command, "err", err)
			}
		}
		res.Deliveries = append(res.Deliveries, del)
	}
	sum := sessiondb.SummarizeEvent(decisions)
	res.Outcome, res.Reason = takenOutcome(res.Deliveries)
	if sum.Drop != "" {
		res.Outcome, res.Reason = RouteDropped, string(sum.Drop)
		if err := reg.RecordDroppedMessage(ctx, sessiondb.DroppedMessage{ChannelType: ev.ChannelType, PlatformID: ev.PlatformID,
			UserID: userID, SenderName: ev.Sender.Name, Reason: sum.Drop, MessagingGroupID: mg.ID, AgentGroupID: sum.DropAgentGroupID}); err != nil {
			return res, err
		}
	}
	if sum.ApprovalAgentGroupID != "" {
		id, err := r.requestSenderApproval(ctx, mg, sum.ApprovalAgentGroupID, ev)
		res.ApprovalID = id
		if err != nil {
			res.Warnings = append(res.Warnings, "sender approval: "+err.Error())
		}
	}
	if firstErr != nil {
		return res, sessiondb.Wrap("", firstErr, "route %s", ev.MessageID)
	}
	return res, nil
}

// takenOutcome is the outcome of an event some wiring took, and its
// reason: routed when a row was written; failed when one could not be;
// duplicate (already_stored) when the rows were already there; else
// denied or filtered, naming the command, when the command gate stopped
// it. A message is never reported routed unless a row of it was written
// now.
func takenOutcome(ds []Delivery) (outcome, reason string) {
	dup, failed := false, false
	var denied, filtered string
	for _, d := range ds {
		switch {
		case d.Written:
			return RouteRouted, ""
		case d.Duplicate:
			dup = true
		case d.Error != "":
			failed = true
		case d.CommandGate == CommandDenied:
			denied = d.Command
		case d.CommandGate == CommandFiltered:
			filtered = d.Command
		}
	}
	switch {
	case failed:
		return RouteFailed, ""
	case dup:
		return RouteDuplicate, "already_stored"
	case denied != "":
		return RouteDenied, denied
	case filtered != "":
		return RouteFiltered, filtered
	}
	return RouteFailed, ""
}

// dropReason words why a wiring dropped a message: a gate's refusal (of
// an answer or of context), else not_engaged.
func dropReason(d sessiondb.EngageDecision) string {
	switch {
	case d.Gate != nil && !d.Gate.Allowed:
		return d.Gate.Reason
	case d.Scope != nil && !d.Scope.Allowed:
		return d.Scope.Reason
	case !d.Engaged:
		return "not_engaged"
	}
	return ""
}

// deliver resolves the wiring's session and writes the row into it,
// waking it when engaged, unless the command gate stops the message (it
// sits where NanoClaw's does: after the session is resolved, for context
// as for an engaged message); then del says why and nothing is written.
func (r *Router) deliver(ctx context.Context, mg sessiondb.MessagingGroup, ev Event, content json.RawMessage, sender sessiondb.UserAccess,
	mode sessiondb.SessionMode, del *Delivery) error {
	// A group a registry holds under one of the host's file names (NanoClaw
	// or a hand wrote it) gets no session: its folder would be that file.
	if err := sessiondb.CheckAgentGroupID("agent_group_id", del.AgentGroupID); err != nil {
		return err
	}
	s, created, err := r.reg.ResolveSession(ctx, sessiondb.SessionLookup{AgentGroupID: del.AgentGroupID,
		MessagingGroupID: mg.ID, ThreadID: ev.ThreadID, Mode: mode})
	if err != nil {
		return err
	}
	del.SessionID, del.SessionCreated = s.ID, created
	if del.CommandGate, del.Command = gateCommand(ev.Text, sender, del.AgentGroupID); del.CommandGate != "" {
		r.log.Info("router: command gate", "verdict", del.CommandGate, "command", del.Command, "message", ev.MessageID, "agent_group", del.AgentGroupID)
		return nil
	}
	m := mailbox.InboundMessage{ID: InboundID(ev.MessageID, mg.ID, del.AgentGroupID), Kind: ev.rowKind(), Content: content,
		Routing: ev.routing(), Timestamp: ev.time(r.h.Now()), ContextOnly: del.Outcome != sessiondb.OutcomeEngage}
	del.InboundID = m.ID
	w, err := r.write(ctx, s, created, m, del.Outcome == sessiondb.OutcomeEngage)
	del.Seq, del.Woken, del.HandedOff = w.seq, w.woken, w.handedTo
	del.Written, del.Duplicate = w.inserted, err == nil && !w.inserted
	return err
}

// InboundID is the mailbox row id of platform message messageID of chat
// chatID in a session of agent group agentGroupID:
// "<message id>:<chat>:<agent group>". The agent group keeps a message
// fanned out to several groups apart (NanoClaw's "<message id>:<agent
// group>"); the chat keeps two chats' messages apart in one session, as an
// agent-shared session holds several chats and platforms number messages
// per chat (Telegram's "5" in two chats). So a redelivered event is stored
// once and no other chat's message is taken for it. The chat is its id when
// that holds no ':' and is at most 64 bytes, else "h" and 16 hex digits of
// its SHA-256, so the last ':' before the group always ends the message id
// and no two (message, chat) pairs share a row id. An id longer than a safe
// name may be is "h-" and the SHA-256 of all three. Readers treat the id as
// opaque (NanoClaw's host and container look rows up by it and nothing
// more).
func InboundID(messageID, chatID, agentGroupID string) string {
	chat := chatID
	if len(chat) > 64 || strings.Contains(chat, ":") {
		sum := sha256.Sum256([]byte(chatID))
		chat = "h" + hex.EncodeToString(sum[:8])
	}
	id := messageID + ":" + chat + ":" + agentGroupID
	if len(id) <= sessiondb.MaxNameLen {
		return id
	}
	sum := sha256.Sum256([]byte(messageID + "\x00" + chat + "\x00" + agentGroupID))
	return "h-" + hex.EncodeToString(sum[:])
}

// written is what write did.
type written struct {
	seq      int64
	inserted bool
	woken    bool
	// handedTo names the host the row was handed off to.
	handedTo string
}

// write puts m into session s's mailbox and, when wake and the row is new,
// wakes the session. With Leases, a session another host serves gets the
// row through the registry instead (a hand-off that host writes and wakes);
// otherwise this host takes the session's lease first, so it alone writes,
// wakes and delivers for it.
func (r *Router) write(ctx context.Context, s sessiondb.AgentSession, created bool, m mailbox.InboundMessage, wake bool) (written, error) {
	var w written
	if l := r.cfg.Leases; l != nil {
		held, holder, err := l.Acquire(ctx, s.ID)
		if err != nil {
			return w, err
		}
		if !held {
			return r.handOff(ctx, s, m, wake, holder)
		}
	}
	if err := r.ensureFolder(ctx, s, created); err != nil {
		return w, err
	}
	seq, inserted, err := r.h.Enqueue(ctx, s.Ref(), m)
	if err != nil {
		return w, err
	}
	w.seq, w.inserted = seq, inserted
	if !inserted {
		return w, nil
	}
	if err := r.reg.TouchSession(ctx, s.ID); err != nil {
		return w, err
	}
	if wake {
		w.woken = r.wakeSession(ctx, s.Ref())
	}
	return w, nil
}

// handOff queues m for holder, the host serving s.
func (r *Router) handOff(ctx context.Context, s sessiondb.AgentSession, m mailbox.InboundMessage, wake bool, holder string) (written, error) {
	w := written{handedTo: holder}
	if holder == "" {
		w.handedTo = "next"
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = r.h.Now()
	}
	b, err := json.Marshal(m)
	if err != nil {
		return w, sessiondb.Wrap(sessiondb.EINTERNAL, err, "hand off %s", m.ID)
	}
	w.inserted, err = r.cfg.Leases.svc.HandOff(ctx, sessiondb.HandOff{SessionID: s.ID, AgentGroupID: s.AgentGroupID, RowID: m.ID, Row: b, Wake: wake})
	return w, err
}

// TakeHandOffs writes the rows other hosts handed off for the sessions
// this host serves, or may now serve (their host's lease ran out), into
// their mailboxes, waking those that asked for it, and removes them from
// the registry once written (a row written twice is stored once: the
// mailbox keys rows by id). It returns how many it wrote. Without Leases
// it does nothing.
func (r *Router) TakeHandOffs(ctx context.Context) (int, error) {
	l := r.cfg.Leases
	if l == nil {
		return 0, nil
	}
	hs, err := l.svc.HandOffs(ctx, l.Host(), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	var firstErr error
	for _, h := range hs {
		err := r.takeHandOff(ctx, h)
		switch {
		case err == nil:
			n++
		case firstErr == nil:
			firstErr = err
		}
	}
	return n, firstErr
}

// takeHandOff writes one handed-off row, when this host serves (or now
// takes) its session.
func (r *Router) takeHandOff(ctx context.Context, h sessiondb.HandOff) error {
	held, _, err := r.cfg.Leases.Acquire(ctx, h.SessionID)
	if err != nil || !held {
		return err
	}
	var m mailbox.InboundMessage
	if err := json.Unmarshal(h.Row, &m); err != nil || m.ID != h.RowID {
		r.log.Error("router: dropping a hand-off this host cannot read", "session", h.SessionID, "row", h.RowID, "err", err)
		return r.cfg.Leases.svc.DoneHandOff(ctx, h.ID)
	}
	s, err := r.reg.GetAgentSession(ctx, h.SessionID)
	switch {
	case sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND:
		s = sessiondb.AgentSession{ID: h.SessionID, AgentGroupID: h.AgentGroupID}
	case err != nil:
		return err
	}
	if _, err := r.write(ctx, s, false, m, h.Wake); err != nil {
		return err
	}
	return r.cfg.Leases.svc.DoneHandOff(ctx, h.ID)
}

// ensureFolder initialises the session's mailbox folder unless its
// inbound.db is there with its schema, and writes the projections of a new
// session, so an agent started by hand finds its routing and destinations
// from the first message on. (A crash between the registry insert and the
// folder leaves a session without a folder; the next event for it makes
// one.) An empty inbound.db is one another process is initialising right
// now: InitSession is idempotent and waits for that process's lock, so the
// row written next finds the tables.
func (r *Router) ensureFolder(ctx context.Context, s sessiondb.AgentSession, created bool) error {
	p, err := r.h.Layout().InboundPath(s.Ref())
	if err != nil {
		return err
	}
	fi, statErr := os.Stat(p)
	ready := statErr == nil && fi.Size() > 0
	if ready && !created {
		return nil
	}
	if statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
		return sessiondb.Wrap(sessiondb.EINTERNAL, statErr, "session %s", s.Ref())
	}
	if !ready {
		if err := r.h.InitSession(ctx, s.Ref()); err != nil {
			return err
		}
	}
	return r.project(ctx, s)
}

// wakeSession wakes ref through the waker, if there is one, and reports
// whether it did; a failed wake is logged (the sweep tries again).
func (r *Router) wakeSession(ctx context.Context, ref mailbox.SessionRef) bool {
	w := r.waker()
	if w == nil {
		return false
	}
	if err := w.Wake(ctx, ref); err != nil {
		r.log.Warn("router: wake failed; the sweep will try again", "session", ref.String(), "err", err)
		return false
	}
	return true
}

// notify writes a host notification (text from the system) into the
// session and wakes it (spec A7: approval results).
func (r *Router) notify(ctx context.Context, s sessiondb.AgentSession, text string) error {
	_, err := r.write(ctx, s, false, mailbox.Notification(s.AgentGroupID, text, r.h.Now()), true)
	return err
}
