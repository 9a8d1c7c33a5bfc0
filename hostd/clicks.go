package hostd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/mailbox"
)

// The outcomes of ClickResult.
const (
	ClickAnswered     = "answered"     // a question's answer went to the agent
	ClickApproved     = "approved"     // an approval went through (sender added, action applied...)
	ClickRejected     = "rejected"     // an approval was refused
	ClickConnected    = "connected"    // an unknown chat was wired to an agent group
	ClickFollowUp     = "follow_up"    // a follow-up card went out (choose an agent)
	ClickExpired      = "expired"      // the card's time ran out; nothing was written
	ClickGone         = "gone"         // its session or agent group no longer exists; the card was removed
	ClickUnauthorized = "unauthorized" // the clicker may not decide; the card stays
	ClickIgnored      = "ignored"      // the card was already answered, or the value is unknown
)

// ClickResult is what a click did.
type ClickResult struct {
	CardID    string             `json:"card_id"`
	Kind      sessiondb.CardKind `json:"kind"`
	Outcome   string             `json:"outcome"`
	Value     string             `json:"value,omitempty"`
	SessionID string             `json:"session_id,omitempty"`
	// Replay is the routing of the original event after an approval let
	// it through.
	Replay   *RouteResult `json:"replay,omitempty"`
	Warnings []string     `json:"warnings,omitempty"`
}

// Click handles a click on a card (spec A7): the card's pending row is
// found by its id (sender approvals, channel approvals, action approvals,
// questions, in that order) and its flow runs. An unknown card id is
// not_found; an option index the card does not have is invalid.
func (r *Router) Click(ctx context.Context, c Click) (ClickResult, error) {
	res := ClickResult{CardID: c.CardID}
	if err := c.Validate(); err != nil {
		return res, sessiondb.Wrap(sessiondb.EINVALID, err, "click")
	}
	res.CardID = c.CardID
	card, err := r.reg.FindCard(ctx, c.CardID)
	if err != nil {
		return res, err
	}
	res.Kind = card.Kind
	var opts []sessiondb.QuestionOption
	switch card.Kind {
	case sessiondb.CardSenderApproval:
		opts = card.Sender.Options
	case sessiondb.CardChannelApproval:
		opts = card.Channel.Options
	case sessiondb.CardActionApproval:
		opts = card.Action.Options
	case sessiondb.CardQuestion:
		opts = card.Question.Options
	}
	value := c.Value
	if c.Option != nil {
		if *c.Option >= len(opts) {
			return res, sessiondb.Errorf(sessiondb.EINVALID, "click: option %d: card %s has %d option(s)", *c.Option, c.CardID, len(opts))
		}
		value = opts[*c.Option].Value
	}
	res.Value = value
	clicker := c.ClickerID()
	switch card.Kind {
	case sessiondb.CardQuestion:
		err = r.answerQuestion(ctx, *card.Question, value, clicker, &res)
	case sessiondb.CardActionApproval:
		err = r.decideAction(ctx, *card.Action, value, clicker, &res)
	case sessiondb.CardSenderApproval:
		err = r.decideSender(ctx, *card.Sender, value, clicker, &res)
	case sessiondb.CardChannelApproval:
		err = r.decideChannel(ctx, *card.Channel, value, clicker, &res)
	}
	return res, err
}

// answerQuestion writes the answer into the asking session (spec A7.1).
// The row is deleted first: of two clicks only the one that deletes it
// answers.
func (r *Router) answerQuestion(ctx context.Context, q sessiondb.PendingQuestion, value, clicker string, res *ClickResult) error {
	res.SessionID = q.SessionID
	if q.Expired(r.h.Now(), r.cfg.QuestionTTL) {
		_, err := r.reg.DeleteQuestion(ctx, q.QuestionID)
		res.Outcome = ClickExpired
		return err
	}
	s, err := r.reg.GetAgentSession(ctx, q.SessionID)
	if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND {
		_, err = r.reg.DeleteQuestion(ctx, q.QuestionID)
		res.Outcome = ClickGone
		return err
	}
	if err != nil {
		return err
	}
	claimed, err := r.reg.DeleteQuestion(ctx, q.QuestionID)
	if err != nil {
		return err
	}
	if !claimed {
		res.Outcome = ClickIgnored
		return nil
	}
	m, err := mailbox.QuestionResponse(q.QuestionID, value, clicker,
		mailbox.Routing{ChannelType: q.ChannelType, PlatformID: q.PlatformID, ThreadID: q.ThreadID}, r.h.Now())
	if err != nil {
		return err
	}
	if _, err := r.write(ctx, s, false, m, true); err != nil {
		return err
	}
	res.Outcome = ClickAnswered
	return nil
}

// mayDecide reports whether clicker may decide for agentGroupID: the
// approver the card was sent to, or anyone with admin privilege over the
// group. When not, the click's outcome is ClickUnauthorized.
func (r *Router) mayDecide(ctx context.Context, clicker, approver, agentGroupID string, res *ClickResult) (bool, error) {
	if approver != "" && clicker == approver {
		return true, nil
	}
	u, err := r.reg.UserAccess(ctx, clicker)
	if err != nil {
		return false, err
	}
	if !sessiondb.HasAdminPrivilege(u, agentGroupID) {
		res.Outcome = ClickUnauthorized
		return false, nil
	}
	return true, nil
}

// decideAction resolves an action approval (spec A7.2 with its [IMP]s:
// only admins of the group count, and a row the expiry sweep already
// resolved stays as it is).
func (r *Router) decideAction(ctx context.Context, a sessiondb.PendingApproval, value, clicker string, res *ClickResult) error {
	res.SessionID = a.SessionID
	if ok, err := r.mayDecide(ctx, clicker, "", a.AgentGroupID, res); !ok || err != nil {
		return err
	}
	var s sessiondb.AgentSession
	var err error
	if a.SessionID != "" {
		s, err = r.reg.GetAgentSession(ctx, a.SessionID)
		if err != nil && sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			return err
		}
	}
	if a.SessionID == "" || err != nil {
		// A credential request whose waiter is gone, or a session that
		// was deleted: nobody is left to tell.
		_, err := r.reg.DeleteApproval(ctx, a.ApprovalID)
		res.Outcome = ClickGone
		return err
	}
	st := sessiondb.ApprovalRejected
	if value == sessiondb.ApprovalApprove {
		st = sessiondb.ApprovalApproved
	}
	if _, err := r.reg.ResolveApproval(ctx, a.ApprovalID, st); err != nil {
		if sessiondb.ErrorCode(err) == sessiondb.ECONFLICT {
			res.Outcome = ClickExpired
			return nil
		}
		return err
	}
	note := "Your " + a.Action + " request was rejected by admin."
	res.Outcome = ClickRejected
	if st == sessiondb.ApprovalApproved {
		res.Outcome = ClickApproved
		h := r.cfg.Actions[a.Action]
		switch {
		case h == nil:
			note = "Your " + a.Action + " was approved, but no handler is installed to apply it."
		default:
			msg, herr := h(ctx, s, a.Payload)
			switch {
			case herr != nil:
				note = fmt.Sprintf("Your %s was approved, but applying it failed: %s.", a.Action, errtext.Clip(herr.Error(), 300))
			case msg != "":
				note = msg
			default:
				note = "Your " + a.Action + " request was approved and applied."
			}
		}
	}
	if _, err := r.reg.DeleteApproval(ctx, a.ApprovalID); err != nil {
		return err
	}
	return r.notify(ctx, s, note)
}

// decideSender resolves an unknown-sender approval (spec A7.3): approve
// adds the sender as a member and routes the original event again (stored
// by us or by NanoClaw: readStoredEvent); deny forgets the request (a
// later message asks again). A stored event that cannot be read does not
// stop the approval: the sender is a member, and a warning says the
// message was not routed.
func (r *Router) decideSender(ctx context.Context, p sessiondb.PendingSenderApproval, value, clicker string, res *ClickResult) error {
	if ok, err := r.mayDecide(ctx, clicker, p.ApproverUserID, p.AgentGroupID, res); !ok || err != nil {
		return err
	}
	if value != sessiondb.ApprovalApprove {
		_, err := r.reg.DeleteSenderApproval(ctx, p.ID)
		res.Outcome = ClickRejected
		return err
	}
	ev, perr := r.storedEvent(ctx, p.OriginalMessage, p.MessagingGroupID)
	if perr != nil && sessiondb.ErrorCode(perr) != sessiondb.EINVALID {
		return perr
	}
	if perr != nil {
		r.log.Warn("router: an approved sender's stored message cannot be read; it is not routed", "approval", p.ID, "err", perr)
	}
	if _, _, err := r.reg.EnsureUser(ctx, sessiondb.NewUser{ID: clicker}); err != nil {
		return err
	}
	if _, _, err := r.reg.EnsureUser(ctx, sessiondb.NewUser{ID: p.SenderIdentity, DisplayName: p.SenderName}); err != nil {
		return err
	}
	if _, err := r.reg.AddMember(ctx, p.SenderIdentity, p.AgentGroupID, clicker); err != nil {
		return err
	}
	if _, err := r.reg.DeleteSenderApproval(ctx, p.ID); err != nil {
		return err
	}
	res.Outcome = ClickApproved
	return r.replay(ctx, ev, perr, res)
}

// decideChannel resolves an unknown-chat approval (spec A7.4): connect
// wires the chat (a group chat answers mentions and then sticks, a DM
// answers everything; known senders only; other chatter kept as context),
// re-projects the group's destinations, adds the sender as a member and
// routes the original event again; reject denies the chat, which then
// drops silently; choose_existing sends the approver a card listing every
// agent group.
func (r *Router) decideChannel(ctx context.Context, p sessiondb.PendingChannelApproval, value, clicker string, res *ClickResult) error {
	if ok, err := r.mayDecide(ctx, clicker, p.ApproverUserID, p.AgentGroupID, res); !ok || err != nil {
		return err
	}
	switch {
	case value == sessiondb.ApprovalReject:
		denied := true
		if _, err := r.reg.UpdateMessagingGroup(ctx, p.MessagingGroupID, sessiondb.MessagingGroupUpdate{Denied: &denied}); err != nil {
			return err
		}
		_, err := r.reg.DeleteChannelApproval(ctx, p.MessagingGroupID)
		res.Outcome = ClickRejected
		return err
	case value == channelChooseExisting:
		return r.chooseAgent(ctx, p, res)
	case strings.HasPrefix(value, channelConnect):
		return r.connect(ctx, p, strings.TrimPrefix(value, channelConnect), clicker, res)
	}
	res.Outcome = ClickIgnored
	res.Warnings = append(res.Warnings, fmt.Sprintf("unknown value %q for a channel approval", errtext.Clip(value, 64)))
	return nil
}

// chooseAgent sends the approver the follow-up card: every agent group,
// then Cancel (which rejects the chat, as in NanoClaw).
func (r *Router) chooseAgent(ctx context.Context, p sessiondb.PendingChannelApproval, res *ClickResult) error {
	groups, err := r.reg.ListAgentGroups(ctx)
	if err != nil {
		return err
	}
	opts := make([]sessiondb.QuestionOption, 0, len(groups)+1)
	for _, g := range groups {
		opts = append(opts, sessiondb.QuestionOption{Label: g.Name, SelectedLabel: "✅ Connected to " + g.Name, Value: channelConnect + g.ID})
	}
	opts = append(opts, sessiondb.QuestionOption{Label: "Cancel", SelectedLabel: "🙅 Cancelled", Value: sessiondb.ApprovalReject})
	title, question := "📋 Choose an agent", "Which agent should handle this channel?"
	if err := r.reg.UpdateChannelApprovalCard(ctx, p.MessagingGroupID, title, opts); err != nil {
		return err
	}
	dm, err := sessiondb.ResolveUserDM(ctx, r.reg, r.dms, p.ApproverUserID)
	if err != nil {
		return err
	}
	if dm.Chat == nil {
		return unreachable([]string{p.ApproverUserID + ": " + dm.Unreachable})
	}
	if _, err := r.sendCard(ctx, mailbox.SessionRef{AgentGroupID: p.AgentGroupID}, *dm.Chat, p.MessagingGroupID, "choose", title, question, opts); err != nil {
		return err
	}
	res.Outcome = ClickFollowUp
	return nil
}

// connect wires the chat of p to agentGroupID and lets its first message
// through.
func (r *Router) connect(ctx context.Context, p sessiondb.PendingChannelApproval, agentGroupID, clicker string, res *ClickResult) error {
	if _, err := r.reg.GetAgentGroup(ctx, agentGroupID); err != nil {
		if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			return err
		}
		_, err := r.reg.DeleteChannelApproval(ctx, p.MessagingGroupID)
		res.Outcome = ClickGone
		return err
	}
	mg, err := r.reg.GetMessagingGroup(ctx, p.MessagingGroupID)
	if err != nil {
		return err
	}
	w := sessiondb.NewWiring{MessagingGroupID: mg.ID, AgentGroupID: agentGroupID, EngageMode: sessiondb.EngagePattern,
		EngagePattern: sessiondb.MatchEverything, SenderScope: sessiondb.ScopeKnown,
		IgnoredMessagePolicy: sessiondb.IgnoredAccumulate, SessionMode: sessiondb.ModeShared}
	if mg.IsGroup {
		w.EngageMode, w.EngagePattern = sessiondb.EngageMentionSticky, ""
	}
	switch _, err := r.reg.CreateWiring(ctx, w); {
	case sessiondb.ErrorCode(err) == sessiondb.ECONFLICT:
		// Wired meanwhile (an admin, another click): connected all the same.
	case err != nil:
		return err
	default:
		// The new wiring's destination reaches the group's running
		// sessions now, not at their next spawn ([IMP] of spec A8).
		if _, err := r.Reproject(ctx, agentGroupID); err != nil {
			res.Warnings = append(res.Warnings, "re-projection: "+err.Error())
		}
	}
	ev, perr := readStoredEvent(p.OriginalMessage, mg.IsGroup, r.h.Now())
	if perr != nil {
		r.log.Warn("router: a connected chat's stored message cannot be read; it is not routed", "chat", mg.ID, "err", perr)
	}
	if sender := ev.UserID(); perr == nil && sender != "" {
		if _, _, err := r.reg.EnsureUser(ctx, sessiondb.NewUser{ID: clicker}); err != nil {
			return err
		}
		if _, _, err := r.reg.EnsureUser(ctx, sessiondb.NewUser{ID: sender, Kind: ev.ChannelType, DisplayName: ev.Sender.Name}); err != nil {
			return err
		}
		if _, err := r.reg.AddMember(ctx, sender, agentGroupID, clicker); err != nil {
			return err
		}
	}
	if _, err := r.reg.DeleteChannelApproval(ctx, p.MessagingGroupID); err != nil {
		return err
	}
	res.Outcome = ClickConnected
	return r.replay(ctx, ev, perr, res)
}

// storedEvent reads an approval request's stored event (readStoredEvent),
// taking whether it came from a group chat from the chat when the event
// does not say. An event that cannot be read is invalid; any other error
// is the registry's.
func (r *Router) storedEvent(ctx context.Context, orig json.RawMessage, chatID string) (Event, error) {
	isGroup := false
	switch mg, err := r.reg.GetMessagingGroup(ctx, chatID); {
	case err == nil:
		isGroup = mg.IsGroup
	case sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND:
		return Event{}, err
	}
	return readStoredEvent(orig, isGroup, r.h.Now())
}

// replay routes a stored event again (after an approval); one that could
// not be read (perr) is reported as a warning instead.
func (r *Router) replay(ctx context.Context, ev Event, perr error, res *ClickResult) error {
	if perr != nil {
		res.Warnings = append(res.Warnings, "the message that asked was not routed: "+perr.Error())
		return nil
	}
	rr, err := r.Route(ctx, ev)
	res.Replay = &rr
	return err
}
