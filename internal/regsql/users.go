package regsql

import (
	"context"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Users, roles, memberships and the DM cache.

const userCols = "id, kind, display_name, created_at"

func scanUser(r Scanner) (sessiondb.User, error) {
	var u sessiondb.User
	err := r.Scan(&u.ID, &u.Kind, intoText(&u.DisplayName), IntoTime(&u.CreatedAt))
	return u, err
}

// EnsureUser implements sessiondb.UserService.
func (c *Registry) EnsureUser(ctx context.Context, n sessiondb.NewUser) (sessiondb.User, bool, error) {
	if err := n.Validate(); err != nil {
		return sessiondb.User{}, false, err
	}
	if n.Kind == "" {
		n.Kind, _, _ = strings.Cut(n.ID, ":")
	}
	// Most senders are known: answer them from a reader.
	if u, err := c.GetUser(ctx, n.ID); err == nil && (u.DisplayName != "" || n.DisplayName == "") {
		return u, false, nil
	} else if err != nil && sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		return sessiondb.User{}, false, err
	}
	var u sessiondb.User
	created := false
	err := c.write(ctx, "ensure user", func(tx Tx) error {
		found, err := AppendRows(tx.Context(), tx, "SELECT "+userCols+" FROM users WHERE id = ?", []any{n.ID}, nil, scanUser)
		if err != nil {
			return err
		}
		created = len(found) == 0
		switch {
		case created:
			_, err = tx.Exec("INSERT INTO users ("+userCols+") VALUES (?, ?, ?, ?)", n.ID, n.Kind, nullText(n.DisplayName), c.stamp())
		case found[0].DisplayName == "" && n.DisplayName != "":
			_, err = tx.Exec("UPDATE users SET display_name = ? WHERE id = ?", n.DisplayName, n.ID)
		}
		if err != nil {
			return err
		}
		u, err = one(c, tx.Context(), tx, "user", n.ID, "SELECT "+userCols+" FROM users WHERE id = ?", []any{n.ID}, scanUser)
		return err
	})
	return u, created, err
}

// GetUser implements sessiondb.UserService.
func (c *Registry) GetUser(ctx context.Context, id string) (sessiondb.User, error) {
	return one(c, ctx, c.rq, "user", id, "SELECT "+userCols+" FROM users WHERE id = ?", []any{id}, scanUser)
}

// ListUsers implements sessiondb.UserService.
func (c *Registry) ListUsers(ctx context.Context) ([]sessiondb.User, error) {
	out, err := AppendRows(ctx, c.rq, "SELECT "+userCols+" FROM users ORDER BY id", nil, []sessiondb.User{}, scanUser)
	return out, c.wrap(err, "list users")
}

const roleCols = "user_id, role, agent_group_id, granted_by, granted_at"

func scanRole(r Scanner) (sessiondb.RoleGrant, error) {
	var g sessiondb.RoleGrant
	var role string
	err := r.Scan(&g.UserID, &role, intoText(&g.AgentGroupID), intoText(&g.GrantedBy), IntoTime(&g.GrantedAt))
	g.Role = sessiondb.Role(role)
	return g, err
}

// GrantRole implements sessiondb.UserService.
func (c *Registry) GrantRole(ctx context.Context, g sessiondb.NewRoleGrant) (bool, error) {
	if err := g.Validate(); err != nil {
		return false, err
	}
	granted := false
	err := c.write(ctx, "grant role", func(tx Tx) error {
		ctx := tx.Context()
		if err := mustExist(ctx, tx, "user", "users", g.UserID); err != nil {
			return err
		}
		if g.GrantedBy != "" {
			if err := mustExist(ctx, tx, "granting user", "users", g.GrantedBy); err != nil {
				return err
			}
		}
		if g.AgentGroupID != "" {
			if err := mustExist(ctx, tx, "agent group", "agent_groups", g.AgentGroupID); err != nil {
				return err
			}
		}
		has, err := hasRow(ctx, tx, "SELECT 1 FROM user_roles WHERE user_id = ? AND role = ? AND agent_group_id IS NOT DISTINCT FROM ?", g.UserID, string(g.Role), nullText(g.AgentGroupID))
		if err != nil || has {
			return err
		}
		_, err = tx.Exec("INSERT INTO user_roles ("+roleCols+") VALUES (?, ?, ?, ?, ?)",
			g.UserID, string(g.Role), nullText(g.AgentGroupID), nullText(g.GrantedBy), c.stamp())
		granted = err == nil
		return err
	})
	return granted, err
}

// RevokeRole implements sessiondb.UserService.
func (c *Registry) RevokeRole(ctx context.Context, userID string, role sessiondb.Role, agentGroupID string) (bool, error) {
	return c.deleteOne(ctx, "revoke role", "DELETE FROM user_roles WHERE user_id = ? AND role = ? AND agent_group_id IS NOT DISTINCT FROM ?", userID, string(role), nullText(agentGroupID))
}

// ListRoles implements sessiondb.UserService.
func (c *Registry) ListRoles(ctx context.Context, f sessiondb.RoleFilter) ([]sessiondb.RoleGrant, error) {
	return c.listRoles(ctx, c.rq, f)
}

func (c *Registry) listRoles(ctx context.Context, q Querier, f sessiondb.RoleFilter) ([]sessiondb.RoleGrant, error) {
	var w where
	w.equal("user_id", f.UserID)
	w.equal("role", string(f.Role))
	if f.GlobalOnly {
		w.and("agent_group_id IS NULL")
	} else {
		w.equal("agent_group_id", f.AgentGroupID)
	}
	return listByTime(ctx, c, q, "roles", "SELECT "+roleCols+" FROM user_roles"+w.String()+" ORDER BY user_id, role, agent_group_id", w.args,
		scanRole, func(g sessiondb.RoleGrant) time.Time { return g.GrantedAt })
}

// AddMember implements sessiondb.UserService.
func (c *Registry) AddMember(ctx context.Context, userID, agentGroupID, addedBy string) (bool, error) {
	if err := sessiondb.CheckUserID("user_id", userID); err != nil {
		return false, err
	}
	if addedBy != "" {
		if err := sessiondb.CheckUserID("added_by", addedBy); err != nil {
			return false, err
		}
	}
	added := false
	err := c.write(ctx, "add member", func(tx Tx) error {
		ctx := tx.Context()
		if err := mustExist(ctx, tx, "user", "users", userID); err != nil {
			return err
		}
		if err := mustExist(ctx, tx, "agent group", "agent_groups", agentGroupID); err != nil {
			return err
		}
		if addedBy != "" {
			if err := mustExist(ctx, tx, "adding user", "users", addedBy); err != nil {
				return err
			}
		}
		n, err := Changed(tx, "INSERT INTO agent_group_members (user_id, agent_group_id, added_by, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
			userID, agentGroupID, nullText(addedBy), c.stamp())
		added = n > 0
		return err
	})
	return added, err
}

// RemoveMember implements sessiondb.UserService.
func (c *Registry) RemoveMember(ctx context.Context, userID, agentGroupID string) (bool, error) {
	return c.deleteOne(ctx, "remove member", "DELETE FROM agent_group_members WHERE user_id = ? AND agent_group_id = ?", userID, agentGroupID)
}

const memberCols = "user_id, agent_group_id, added_by, added_at"

func scanMember(r Scanner) (sessiondb.Membership, error) {
	var m sessiondb.Membership
	err := r.Scan(&m.UserID, &m.AgentGroupID, intoText(&m.AddedBy), IntoTime(&m.AddedAt))
	return m, err
}

// ListMembers implements sessiondb.UserService.
func (c *Registry) ListMembers(ctx context.Context, agentGroupID string) ([]sessiondb.Membership, error) {
	return listByTime(ctx, c, c.rq, "members", "SELECT "+memberCols+" FROM agent_group_members WHERE agent_group_id = ? ORDER BY user_id", []any{agentGroupID},
		scanMember, func(m sessiondb.Membership) time.Time { return m.AddedAt })
}

// UserAccess implements sessiondb.UserService.
func (c *Registry) UserAccess(ctx context.Context, userID string) (sessiondb.UserAccess, error) {
	a := sessiondb.UserAccess{UserID: userID}
	if userID == "" {
		return a, nil
	}
	err := c.read(ctx, "read the access of user "+userID, func(q Querier) error {
		users, err := AppendRows(ctx, q, "SELECT "+userCols+" FROM users WHERE id = ?", []any{userID}, nil, scanUser)
		if err != nil || len(users) == 0 {
			return err
		}
		a.User = &users[0]
		if a.Roles, err = c.listRoles(ctx, q, sessiondb.RoleFilter{UserID: userID}); err != nil {
			return err
		}
		a.Memberships, err = AppendRows(ctx, q, "SELECT "+memberCols+" FROM agent_group_members WHERE user_id = ? ORDER BY agent_group_id", []any{userID}, nil, scanMember)
		return err
	})
	return a, err
}

// GetUserDM implements sessiondb.UserService.
func (c *Registry) GetUserDM(ctx context.Context, userID, channelType string) (sessiondb.UserDM, error) {
	return one(c, ctx, c.rq, "DM of user", userID+" on "+channelType,
		"SELECT user_id, channel_type, messaging_group_id, resolved_at FROM user_dms WHERE user_id = ? AND channel_type = ?",
		[]any{userID, channelType}, func(r Scanner) (sessiondb.UserDM, error) {
			var d sessiondb.UserDM
			err := r.Scan(&d.UserID, &d.ChannelType, &d.MessagingGroupID, IntoTime(&d.ResolvedAt))
			return d, err
		})
}

// SaveUserDM implements sessiondb.UserService.
func (c *Registry) SaveUserDM(ctx context.Context, n sessiondb.NewUserDM) (sessiondb.MessagingGroup, error) {
	if err := n.Validate(); err != nil {
		return sessiondb.MessagingGroup{}, err
	}
	var m sessiondb.MessagingGroup
	err := c.write(ctx, "save user DM", func(tx Tx) error {
		if err := mustExist(tx.Context(), tx, "user", "users", n.UserID); err != nil {
			return err
		}
		now := c.stamp()
		found, err := findChat(tx, n.ChannelType, n.PlatformID)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			m = found[0]
		} else if m, err = c.insertMessagingGroup(tx, sessiondb.NewMessagingGroup{ChannelType: n.ChannelType, PlatformID: n.PlatformID,
			Name: n.Name, UnknownSenderPolicy: sessiondb.PolicyStrict}, now); err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO user_dms (user_id, channel_type, messaging_group_id, resolved_at) VALUES (?, ?, ?, ?)
ON CONFLICT(user_id, channel_type) DO UPDATE SET messaging_group_id = excluded.messaging_group_id, resolved_at = excluded.resolved_at`,
			n.UserID, n.ChannelType, m.ID, now)
		return err
	})
	return m, err
}
