package http

import (
	"net/http"
	"net/url"

	"github.com/sessiondb/sessiondb"
)

// registryView is the registry page: the control plane's central registry
// in one page, section by section.
type registryView struct {
	Groups    []sessiondb.AgentGroup
	Chats     map[string]sessiondb.MessagingGroup
	ChatList  []sessiondb.MessagingGroup
	Wirings   []sessiondb.Wiring
	Sessions  []registrySession
	Approvals []sessiondb.PendingApproval
	Questions []sessiondb.PendingQuestion
	Dropped   []sessiondb.DroppedSender
	// Access holds the users, roles, members and destinations.
	Access registryAccess
	// NextSessions is the URL of the next page of sessions.
	NextSessions string
}

// registrySession is a registered session with the link to its mailbox
// when the server serves the mailboxes.
type registrySession struct {
	sessiondb.AgentSession
	Chat, MailboxURL string
}

// registryPage bounds each of the page's lists.
const registryPage = 100

// uiRegistry: GET /registry?cursor= shows the central registry: agent
// groups, chats (messaging groups) and their wirings, the sessions (a page
// at a time, newest activity first as the registry lists them), pending
// approvals and questions, the senders whose messages were dropped, and
// the users, roles, members and destinations (ui_registry_access.go).
func (s *Server) uiRegistry(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	reg := s.cfg.Registry
	cursor := r.URL.Query().Get("cursor")
	v := registryView{Chats: map[string]sessiondb.MessagingGroup{}}
	var err error
	if v.Groups, err = reg.ListAgentGroups(ctx); err != nil {
		return err
	}
	if v.ChatList, err = reg.ListMessagingGroups(ctx, sessiondb.MessagingGroupFilter{}); err != nil {
		return err
	}
	for _, c := range v.ChatList {
		v.Chats[c.ID] = c
	}
	if v.Wirings, err = reg.ListWirings(ctx, sessiondb.WiringFilter{}); err != nil {
		return err
	}
	page, err := reg.ListAgentSessions(ctx, sessiondb.AgentSessionFilter{Limit: registryPage, Cursor: cursor})
	if err != nil {
		return err
	}
	for _, x := range page.Sessions {
		rs := registrySession{AgentSession: x}
		if c, ok := v.Chats[x.MessagingGroupID]; ok {
			rs.Chat = chatName(c)
		}
		if s.cfg.Mailboxes != nil {
			rs.MailboxURL = "/mailboxes/" + url.PathEscape(x.AgentGroupID) + "/" + url.PathEscape(x.ID)
		}
		v.Sessions = append(v.Sessions, rs)
	}
	if page.NextCursor != "" {
		v.NextSessions = withQuery("/registry", "cursor", page.NextCursor) + "#sessions"
	}
	if v.Approvals, err = reg.ListApprovals(ctx, sessiondb.ApprovalFilter{Status: sessiondb.ApprovalPending, Limit: registryPage}); err != nil {
		return err
	}
	if v.Questions, err = reg.ListQuestions(ctx, ""); err != nil {
		return err
	}
	if v.Dropped, err = reg.ListDropped(ctx, registryPage); err != nil {
		return err
	}
	if v.Access, err = loadRegistryAccess(ctx, reg, v.Groups); err != nil {
		return err
	}
	s.page(w, r, "registry", v)
	return nil
}

// chatName names a chat for people: its name, else its platform handle.
func chatName(c sessiondb.MessagingGroup) string {
	if c.Name != "" {
		return c.Name + " (" + c.ChannelType + ")"
	}
	return c.ChannelType + " " + c.PlatformID
}
