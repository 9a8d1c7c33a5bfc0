package http

import (
	"net/http"

	"github.com/sessiondb/sessiondb"
)

// routesRegistry registers the control plane's routes: the central
// registry (--central) and the subagent store (--subagents), read only.
func (s *Server) routesRegistry() {
	if s.cfg.Registry != nil {
		s.read("GET /api/v1/registry/agent-groups", s.listAgentGroups)
		s.read("GET /api/v1/registry/messaging-groups", s.listMessagingGroups)
		s.read("GET /api/v1/registry/wirings", s.listWirings)
		s.read("GET /api/v1/registry/sessions", s.listAgentSessions)
		s.read("GET /api/v1/registry/approvals", s.listApprovals)
		s.read("GET /api/v1/registry/questions", s.listQuestions)
		s.read("GET /api/v1/registry/dropped", s.listDropped)
		s.routesRegistryAccess()
	}
	if s.cfg.Subagents != nil {
		s.read("GET /api/v1/subagents", s.listSubagents)
		s.read("GET /api/v1/subagents/{id}", s.getSubagent)
	}
}

// listAgentGroups: GET /api/v1/registry/agent-groups → {"agent_groups":[...]}.
func (s *Server) listAgentGroups(w http.ResponseWriter, r *http.Request) error {
	gs, err := s.cfg.Registry.ListAgentGroups(r.Context())
	return answer(w, map[string]any{"agent_groups": sessiondb.NonNil(gs)}, err)
}

// listMessagingGroups: GET /api/v1/registry/messaging-groups?channel_type=.
func (s *Server) listMessagingGroups(w http.ResponseWriter, r *http.Request) error {
	gs, err := s.cfg.Registry.ListMessagingGroups(r.Context(), sessiondb.MessagingGroupFilter{ChannelType: r.URL.Query().Get("channel_type")})
	return answer(w, map[string]any{"messaging_groups": sessiondb.NonNil(gs)}, err)
}

// listWirings: GET /api/v1/registry/wirings?messaging_group=&agent_group=.
func (s *Server) listWirings(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ws, err := s.cfg.Registry.ListWirings(r.Context(), sessiondb.WiringFilter{MessagingGroupID: q.Get("messaging_group"), AgentGroupID: q.Get("agent_group")})
	return answer(w, map[string]any{"wirings": sessiondb.NonNil(ws)}, err)
}

// listAgentSessions: GET /api/v1/registry/sessions?agent_group=
// &messaging_group=&status=&container_status=&limit=&cursor= → a page of
// the session registry with next_cursor.
func (s *Server) listAgentSessions(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	f := sessiondb.AgentSessionFilter{AgentGroupID: p.str("agent_group"), MessagingGroupID: p.str("messaging_group"),
		Status: sessiondb.SessionStatus(p.str("status")), ContainerStatus: sessiondb.ContainerStatus(p.str("container_status")),
		Limit: p.int("limit", 50, 1, 500), Cursor: p.str("cursor")}
	if p.err != nil {
		return p.err
	}
	page, err := s.cfg.Registry.ListAgentSessions(r.Context(), f)
	page.Sessions = sessiondb.NonNil(page.Sessions)
	return answer(w, page, err)
}

// listApprovals: GET /api/v1/registry/approvals?status=&action=
// &agent_group=&session=&limit= → the action approvals, and the pending
// sender and channel approvals (unknown senders and chats waiting for an
// admin).
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	f := sessiondb.ApprovalFilter{Status: sessiondb.ApprovalStatus(p.str("status")), Action: p.str("action"),
		AgentGroupID: p.str("agent_group"), SessionID: p.str("session"), Limit: p.int("limit", 100, 1, 1000)}
	if p.err != nil {
		return p.err
	}
	ctx := r.Context()
	as, err := s.cfg.Registry.ListApprovals(ctx, f)
	if err != nil {
		return err
	}
	senders, err := s.cfg.Registry.ListSenderApprovals(ctx, "")
	if err != nil {
		return err
	}
	channels, err := s.cfg.Registry.ListChannelApprovals(ctx)
	return answer(w, map[string]any{"approvals": sessiondb.NonNil(as), "sender_approvals": sessiondb.NonNil(senders), "channel_approvals": sessiondb.NonNil(channels)}, err)
}

// listQuestions: GET /api/v1/registry/questions?session= → the pending
// questions, oldest first.
func (s *Server) listQuestions(w http.ResponseWriter, r *http.Request) error {
	qs, err := s.cfg.Registry.ListQuestions(r.Context(), r.URL.Query().Get("session"))
	return answer(w, map[string]any{"questions": sessiondb.NonNil(qs)}, err)
}

// listDropped: GET /api/v1/registry/dropped?limit= → the senders whose
// messages were dropped, newest first.
func (s *Server) listDropped(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	limit := p.int("limit", 100, 1, 1000)
	if p.err != nil {
		return p.err
	}
	ds, err := s.cfg.Registry.ListDropped(r.Context(), limit)
	return answer(w, map[string]any{"dropped": sessiondb.NonNil(ds)}, err)
}

// listSubagents: GET /api/v1/subagents?channel=&status=&updated_before=
// &updated_after=&limit=&cursor= → a page with next_cursor.
func (s *Server) listSubagents(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	f := sessiondb.SubagentFilter{ChannelID: p.str("channel"), Status: sessiondb.SubagentStatus(p.str("status")),
		UpdatedBefore: p.id("updated_before"), UpdatedAfter: p.id("updated_after"),
		Limit: p.int("limit", 50, 1, 500), Cursor: p.str("cursor")}
	if p.err != nil {
		return p.err
	}
	page, err := s.cfg.Subagents.ListSubagents(r.Context(), f)
	page.Subagents = sessiondb.NonNil(page.Subagents)
	return answer(w, page, err)
}

// getSubagent: GET /api/v1/subagents/{id}.
func (s *Server) getSubagent(w http.ResponseWriter, r *http.Request) error {
	x, err := s.cfg.Subagents.GetSubagent(r.Context(), r.PathValue("id"))
	return answer(w, x, err)
}
