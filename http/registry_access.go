package http

import (
	"net/http"

	"github.com/sessiondb/sessiondb"
)

// routesRegistryAccess registers the reads of who may talk to the agents
// and where they may send: users, role grants, each agent group's members
// and destinations (what `sessiondb admin` manages), read only.
// routesRegistry calls it when the server has a registry.
func (s *Server) routesRegistryAccess() {
	s.read("GET /api/v1/registry/users", s.listUsers)
	s.read("GET /api/v1/registry/roles", s.listRoles)
	s.read("GET /api/v1/registry/agent-groups/{id}/members", s.listMembers)
	s.read("GET /api/v1/registry/agent-groups/{id}/destinations", s.listDestinations)
}

// listUsers: GET /api/v1/registry/users → {"users":[...]} ordered by id.
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	us, err := s.cfg.Registry.ListUsers(r.Context())
	return answer(w, map[string]any{"users": sessiondb.NonNil(us)}, err)
}

// listRoles: GET /api/v1/registry/roles?user=&role=&agent_group=&global=
// → {"roles":[...]} in the order they were granted.
func (s *Server) listRoles(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	f := sessiondb.RoleFilter{UserID: p.str("user"), Role: sessiondb.Role(p.str("role")), AgentGroupID: p.str("agent_group"), GlobalOnly: p.bool("global")}
	if p.err == nil && f.Role != "" && f.Role.Validate() != nil {
		p.fail("role", "%q is not owner or admin", f.Role)
	}
	if p.err == nil && f.GlobalOnly && f.AgentGroupID != "" {
		p.fail("global", "asks for global grants, agent_group %q for grants scoped to one group: give one", f.AgentGroupID)
	}
	if p.err != nil {
		return p.err
	}
	gs, err := s.cfg.Registry.ListRoles(r.Context(), f)
	return answer(w, map[string]any{"roles": sessiondb.NonNil(gs)}, err)
}

// listMembers: GET /api/v1/registry/agent-groups/{id}/members →
// {"members":[...]} in the order they were added; an unknown group is
// not_found rather than an empty list.
func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.cfg.Registry.GetAgentGroup(r.Context(), id); err != nil {
		return err
	}
	ms, err := s.cfg.Registry.ListMembers(r.Context(), id)
	return answer(w, map[string]any{"members": sessiondb.NonNil(ms)}, err)
}

// listDestinations: GET /api/v1/registry/agent-groups/{id}/destinations →
// {"destinations":[...]} by local name, each with its target row ("chat"
// or "agent"; neither when the target is gone); an unknown group is
// not_found.
func (s *Server) listDestinations(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.cfg.Registry.GetAgentGroup(r.Context(), id); err != nil {
		return err
	}
	ds, err := s.cfg.Registry.ResolveDestinations(r.Context(), id)
	return answer(w, map[string]any{"destinations": sessiondb.NonNil(ds)}, err)
}
