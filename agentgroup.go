package sessiondb

import (
	"context"
	"time"
)

// AgentGroup is one agent: a row of agent_groups. Folder names its
// directory (NanoClaw's groups/<folder>); ID names its sessions' parent
// folder in the mailbox tree, so both are safe names.
type AgentGroup struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Folder        string    `json:"folder"`
	AgentProvider string    `json:"agent_provider,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}

// NewAgentGroup is the input of CreateAgentGroup. An empty ID gets a
// generated "ag-<ms>-<rand6>".
type NewAgentGroup struct {
	ID            string
	Name          string
	Folder        string
	AgentProvider string
}

// Validate checks n: Name set, Folder a safe name (CheckSafeName), ID when
// given an agent group id (CheckAgentGroupID: not one of the host's files
// in the data root), AgentProvider plain text. The error is invalid and
// names the field.
func (n NewAgentGroup) Validate() error {
	return firstError(
		unlessEmpty(n.ID, func() error { return CheckAgentGroupID("id", n.ID) }),
		checkText("name", n.Name, true, MaxNameText),
		CheckSafeName("folder", n.Folder),
		checkText("agent_provider", n.AgentProvider, false, MaxNameText),
	)
}

// AgentGroupUpdate changes the fields that are not nil.
type AgentGroupUpdate struct {
	Name          *string
	AgentProvider *string // "" clears it
}

// Validate checks the fields that are set, as NewAgentGroup.Validate does.
func (u AgentGroupUpdate) Validate() error {
	if u.Name != nil {
		if err := checkText("name", *u.Name, true, MaxNameText); err != nil {
			return err
		}
	}
	if u.AgentProvider != nil {
		return checkText("agent_provider", *u.AgentProvider, false, MaxNameText)
	}
	return nil
}

// AgentGroupService keeps the agent groups.
type AgentGroupService interface {
	// CreateAgentGroup inserts a group with created_at = now. A taken id or
	// folder is a conflict.
	CreateAgentGroup(ctx context.Context, n NewAgentGroup) (AgentGroup, error)
	// GetAgentGroup returns the group or not_found.
	GetAgentGroup(ctx context.Context, id string) (AgentGroup, error)
	// GetAgentGroupByFolder returns the group with that folder or not_found.
	GetAgentGroupByFolder(ctx context.Context, folder string) (AgentGroup, error)
	// ListAgentGroups returns every group ordered by name, then id
	// (NanoClaw's order: its "first agent group" is the first by name).
	ListAgentGroups(ctx context.Context) ([]AgentGroup, error)
	// UpdateAgentGroup applies u and returns the new row; an unknown id is
	// not_found.
	UpdateAgentGroup(ctx context.Context, id string, u AgentGroupUpdate) (AgentGroup, error)
	// DeleteAgentGroup deletes the group with everything that only
	// configures it: its wirings, destinations it owns and destinations
	// that name it, role grants scoped to it, its memberships, its
	// container config and its pending sender and channel approvals. A
	// group that still has sessions (of any status) is a conflict: sessions
	// hold conversations and are never deleted here. Unknown id: not_found.
	DeleteAgentGroup(ctx context.Context, id string) error
}
