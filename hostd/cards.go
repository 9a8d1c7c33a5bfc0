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

// askQuestion is a card's content (spec A7): the shape an agent's
// ask_question has, which the channel deliverer renders as buttons
// carrying "ncq:<questionId>:<option index>".
type askQuestion struct {
	Type       string                     `json:"type"`
	QuestionID string                     `json:"questionId"`
	Title      string                     `json:"title"`
	Question   string                     `json:"question"`
	Options    []sessiondb.QuestionOption `json:"options"`
}

// sendCard delivers a host card to a chat straight through the channel
// deliverer (not through a session's mailbox) and returns the platform's
// message id. ref names whose card it is (the session, or the agent group
// with no session) for the deliverer's envelope. The row's id is the card's
// (its buttons carry cardID), or cardID-<suffix> for a second card under
// the same id, so a deliverer that deduplicates by row id sends both.
func (r *Router) sendCard(ctx context.Context, ref mailbox.SessionRef, to sessiondb.MessagingGroup, cardID, suffix, title, question string, opts []sessiondb.QuestionOption) (string, error) {
	if r.cfg.Deliverer == nil {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "no channel deliverer is configured to send the card")
	}
	content, err := mailbox.MarshalContent(askQuestion{Type: "ask_question", QuestionID: cardID, Title: title, Question: question, Options: opts})
	if err != nil {
		return "", err
	}
	rowID := cardID
	if suffix != "" {
		rowID += "-" + suffix
	}
	return r.send(ctx, ref, mailbox.OutboundRow{ID: rowID, Kind: mailbox.KindChatSDK,
		Routing: mailbox.Routing{ChannelType: to.ChannelType, PlatformID: to.PlatformID}, Content: content})
}

// send hands one host-made row to the channel deliverer under the host's
// per-operation deadline.
func (r *Router) send(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
	if r.cfg.Deliverer == nil {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "no channel deliverer is configured")
	}
	row.Timestamp = mailbox.FormatTime(r.h.Now())
	dctx, cancel := context.WithTimeout(ctx, r.h.Options().OpTimeout)
	defer cancel()
	return r.cfg.Deliverer.Deliver(dctx, ref, row)
}

// pickApprover returns the first approver of agentGroupID whose DM chat
// resolves, preferring those on originChannel (spec A7.2), with that chat.
// When nobody can be asked the chat is nil and the error, if there were
// approvers, is unreachable: it says why each could not be reached.
func (r *Router) pickApprover(ctx context.Context, agentGroupID, originChannel string) (string, *sessiondb.MessagingGroup, error) {
	grants, err := r.reg.ListRoles(ctx, sessiondb.RoleFilter{})
	if err != nil {
		return "", nil, err
	}
	var why []string
	for _, id := range sessiondb.ApprovalDeliveryOrder(sessiondb.Approvers(grants, agentGroupID), originChannel) {
		dm, err := sessiondb.ResolveUserDM(ctx, r.reg, r.dms, id)
		if err != nil {
			return "", nil, err
		}
		if dm.Chat != nil {
			return id, dm.Chat, nil
		}
		why = append(why, id+": "+dm.Unreachable)
	}
	if len(why) == 0 {
		return "", nil, nil
	}
	r.log.Warn("router: no approver's DM can be reached; the card is not sent", "agent_group", agentGroupID, "why", strings.Join(why, "; "))
	return "", nil, unreachable(why)
}

// unreachable is the error of approvers none of whose DMs could be found.
func unreachable(why []string) error {
	return sessiondb.Errorf(sessiondb.ENOTFOUND, "no approver's DM can be reached, so the card cannot be delivered: %s", strings.Join(why, "; "))
}

// senderName is how a card names the sender of ev.
func senderName(ev Event, fallback string) string {
	switch {
	case ev.Sender.Name != "":
		return ev.Sender.Name
	case ev.Sender.ID != "":
		return ev.UserID()
	}
	return fallback
}

// chatName is how a card names a chat.
func chatName(mg sessiondb.MessagingGroup) string {
	if mg.Name != "" {
		return mg.Name
	}
	return "a " + mg.ChannelType + " channel"
}

// requestSenderApproval asks an approver of agentGroupID whether ev's
// sender may talk to it in mg (spec A7.3) and returns the request's id:
// the one already pending for (chat, sender) if any, else a new one whose
// card went out. Nobody to ask: "" and no row. A card that could not be
// sent leaves no row either, so the next message asks again.
func (r *Router) requestSenderApproval(ctx context.Context, mg sessiondb.MessagingGroup, agentGroupID string, ev Event) (string, error) {
	userID := ev.UserID()
	pending, err := r.reg.ListSenderApprovals(ctx, mg.ID)
	if err != nil {
		return "", err
	}
	for _, p := range pending {
		if p.SenderIdentity == userID {
			return p.ID, nil
		}
	}
	approver, dm, err := r.pickApprover(ctx, agentGroupID, mg.ChannelType)
	if err != nil || dm == nil {
		if err == nil {
			r.log.Info("router: nobody can approve the sender", "agent_group", agentGroupID, "sender", userID)
		}
		return "", err
	}
	orig, err := ev.storedEventJSON(r.h.Now())
	if err != nil {
		return "", err
	}
	title := "👤 New sender"
	question := fmt.Sprintf("%s wants to talk to your agent in %s. Allow?", senderName(ev, userID), chatName(mg))
	row, added, err := r.reg.AddSenderApproval(ctx, sessiondb.NewSenderApproval{MessagingGroupID: mg.ID, AgentGroupID: agentGroupID,
		SenderIdentity: userID, SenderName: ev.Sender.Name, OriginalMessage: orig, ApproverUserID: approver,
		Title: title, Options: sessiondb.AllowDenyOptions})
	if err != nil || !added {
		return row.ID, err
	}
	if _, err := r.sendCard(ctx, mailbox.SessionRef{AgentGroupID: agentGroupID}, *dm, row.ID, "", title, question, row.Options); err != nil {
		if _, derr := r.reg.DeleteSenderApproval(ctx, row.ID); derr != nil {
			r.log.Warn("router: could not withdraw a sender approval whose card failed", "id", row.ID, "err", derr)
		}
		return "", sessiondb.Wrap("", err, "send the approval card to %s", approver)
	}
	return row.ID, nil
}

// Card option values of channel approvals (spec A7.4).
const (
	channelConnect        = "connect:"
	channelChooseExisting = "choose_existing"
)

// requestChannelApproval asks an approver what to do with mg, an unwired
// chat that mentioned the bot (spec A7.4), and returns the request's id
// (the chat's id): the pending one if any, else a new one whose card went
// out; "" when there is no agent group or nobody to ask.
func (r *Router) requestChannelApproval(ctx context.Context, mg sessiondb.MessagingGroup, ev Event) (string, error) {
	switch _, err := r.reg.GetChannelApproval(ctx, mg.ID); {
	case err == nil:
		return mg.ID, nil
	case sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND:
		return "", err
	}
	groups, err := r.reg.ListAgentGroups(ctx)
	if err != nil || len(groups) == 0 {
		return "", err
	}
	first := groups[0]
	approver, dm, err := r.pickApprover(ctx, first.ID, mg.ChannelType)
	if err != nil || dm == nil {
		if err == nil {
			r.log.Info("router: nobody can approve the chat", "chat", mg.ID)
		}
		return "", err
	}
	var opts []sessiondb.QuestionOption
	if len(groups) == 1 {
		opts = append(opts, sessiondb.QuestionOption{Label: "Connect to " + first.Name, SelectedLabel: "✅ Connected to " + first.Name, Value: channelConnect + first.ID})
	} else {
		opts = append(opts, sessiondb.QuestionOption{Label: "Choose existing agent", SelectedLabel: "📋 Choosing…", Value: channelChooseExisting})
	}
	opts = append(opts, sessiondb.QuestionOption{Label: "Reject", SelectedLabel: "🙅 Rejected", Value: sessiondb.ApprovalReject})
	who := senderName(ev, "Someone")
	title, question := "💬 New direct message", fmt.Sprintf("%s sent your bot a DM on %s. How would you like to handle it?", who, mg.ChannelType)
	if mg.IsGroup {
		title, question = "📣 Bot mentioned in new channel", fmt.Sprintf("%s mentioned your bot in %s. How would you like to handle this channel?", who, chatName(mg))
	}
	orig, err := ev.storedEventJSON(r.h.Now())
	if err != nil {
		return "", err
	}
	row, added, err := r.reg.AddChannelApproval(ctx, sessiondb.PendingChannelApproval{MessagingGroupID: mg.ID, AgentGroupID: first.ID,
		OriginalMessage: orig, ApproverUserID: approver, Title: title, Options: opts})
	if err != nil || !added {
		return row.MessagingGroupID, err
	}
	if _, err := r.sendCard(ctx, mailbox.SessionRef{AgentGroupID: first.ID}, *dm, mg.ID, "", title, question, opts); err != nil {
		if _, derr := r.reg.DeleteChannelApproval(ctx, mg.ID); derr != nil {
			r.log.Warn("router: could not withdraw a channel approval whose card failed", "chat", mg.ID, "err", derr)
		}
		return "", sessiondb.Wrap("", err, "send the approval card to %s", approver)
	}
	return mg.ID, nil
}

// RequestApproval asks an admin to approve an action of session s (spec
// A7.2: install_packages, add_mcp_server, ...): the first approver of its
// agent group with a reachable DM gets a card, and the request waits in
// pending_approvals. When nobody can be asked or the card cannot be sent,
// the agent is told "<action> failed: ..." and no row is left. It returns
// the approval's id ("" when none was made).
func (r *Router) RequestApproval(ctx context.Context, s sessiondb.AgentSession, action string, payload json.RawMessage, title, question string) (string, error) {
	origin := ""
	if s.MessagingGroupID != "" {
		mg, err := r.reg.GetMessagingGroup(ctx, s.MessagingGroupID)
		if err == nil {
			origin = mg.ChannelType
		} else if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			return "", err
		}
	}
	grants, err := r.reg.ListRoles(ctx, sessiondb.RoleFilter{})
	if err != nil {
		return "", err
	}
	if len(sessiondb.Approvers(grants, s.AgentGroupID)) == 0 {
		return "", r.notify(ctx, s, action+" failed: no owner or admin configured to approve.")
	}
	approver, dm, err := r.pickApprover(ctx, s.AgentGroupID, origin)
	switch {
	case sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND:
		return "", r.notify(ctx, s, action+" failed: no DM channel found for any eligible approver ("+errtext.Clip(err.Error(), 600)+").")
	case err != nil:
		return "", err
	case dm == nil:
		return "", r.notify(ctx, s, action+" failed: no DM channel found for any eligible approver.")
	}
	a, err := r.reg.AddApproval(ctx, sessiondb.NewApproval{SessionID: s.ID, Action: action, Payload: payload,
		AgentGroupID: s.AgentGroupID, Title: title, Options: sessiondb.ApproveRejectOptions,
		ExpiresAt: r.h.Now().Add(r.cfg.ApprovalTTL)})
	if err != nil {
		return "", err
	}
	pid, err := r.sendCard(ctx, s.Ref(), *dm, a.ApprovalID, "", title, question, a.Options)
	if err != nil {
		if _, derr := r.reg.DeleteApproval(ctx, a.ApprovalID); derr != nil {
			r.log.Warn("router: could not withdraw an approval whose card failed", "id", a.ApprovalID, "err", derr)
		}
		r.log.Warn("router: approval card failed", "id", a.ApprovalID, "approver", approver, "err", err)
		return "", r.notify(ctx, s, fmt.Sprintf("%s failed: could not deliver approval request to %s.", action, approver))
	}
	if err := r.reg.SetApprovalCard(ctx, a.ApprovalID, dm.ChannelType, dm.PlatformID, pid); err != nil {
		return a.ApprovalID, err
	}
	return a.ApprovalID, nil
}
