package regsql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sessiondb/sessiondb"
)

// Agent groups, chats and the wirings between them.

const agentGroupCols = "id, name, folder, agent_provider, created_at"

func scanAgentGroup(r Scanner) (sessiondb.AgentGroup, error) {
	var g sessiondb.AgentGroup
	err := r.Scan(&g.ID, &g.Name, &g.Folder, intoText(&g.AgentProvider), IntoTime(&g.CreatedAt))
	return g, err
}

// one runs query and returns its only row scanned, or not_found naming
// what and id.
func one[T any](c *Registry, ctx context.Context, q Querier, what, id, query string, args []any, scan func(Scanner) (T, error)) (T, error) {
	rows, err := AppendRows(ctx, q, query, args, nil, scan)
	var zero T
	if err != nil {
		return zero, c.wrap(err, "read %s %q", what, id)
	}
	if len(rows) == 0 {
		return zero, sessiondb.NotFound(what, id)
	}
	return rows[0], nil
}

// CreateAgentGroup implements sessiondb.AgentGroupService.
func (c *Registry) CreateAgentGroup(ctx context.Context, n sessiondb.NewAgentGroup) (sessiondb.AgentGroup, error) {
	if err := n.Validate(); err != nil {
		return sessiondb.AgentGroup{}, err
	}
	now := c.now()
	g := sessiondb.AgentGroup{ID: n.ID, Name: n.Name, Folder: n.Folder, AgentProvider: n.AgentProvider, CreatedAt: now}
	if g.ID == "" {
		g.ID = sessiondb.NewID("ag", now)
	}
	err := c.write(ctx, "create agent group", func(tx Tx) error {
		if taken, err := hasRow(tx.Context(), tx, "SELECT 1 FROM agent_groups WHERE id = ?", g.ID); err != nil || taken {
			return orConflict(err, "agent group id %q is taken", g.ID)
		}
		if taken, err := hasRow(tx.Context(), tx, "SELECT 1 FROM agent_groups WHERE folder = ?", g.Folder); err != nil || taken {
			return orConflict(err, "folder %q belongs to another agent group", g.Folder)
		}
		_, err := tx.Exec("INSERT INTO agent_groups ("+agentGroupCols+") VALUES (?, ?, ?, ?, ?)",
			g.ID, g.Name, g.Folder, nullText(g.AgentProvider), sessiondb.FormatTimestamp(now))
		return err
	})
	if err != nil {
		return sessiondb.AgentGroup{}, err
	}
	g.CreatedAt, _ = sessiondb.ParseTimestamp(sessiondb.FormatTimestamp(now))
	return g, nil
}

// orConflict returns err when set, else a conflict error.
func orConflict(err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	return sessiondb.Errorf(sessiondb.ECONFLICT, format, args...)
}

// GetAgentGroup implements sessiondb.AgentGroupService.
func (c *Registry) GetAgentGroup(ctx context.Context, id string) (sessiondb.AgentGroup, error) {
	return one(c, ctx, c.rq, "agent group", id, "SELECT "+agentGroupCols+" FROM agent_groups WHERE id = ?", []any{id}, scanAgentGroup)
}

// GetAgentGroupByFolder implements sessiondb.AgentGroupService.
func (c *Registry) GetAgentGroupByFolder(ctx context.Context, folder string) (sessiondb.AgentGroup, error) {
	return one(c, ctx, c.rq, "agent group with folder", folder, "SELECT "+agentGroupCols+" FROM agent_groups WHERE folder = ?", []any{folder}, scanAgentGroup)
}

// ListAgentGroups implements sessiondb.AgentGroupService.
func (c *Registry) ListAgentGroups(ctx context.Context) ([]sessiondb.AgentGroup, error) {
	out, err := AppendRows(ctx, c.rq, "SELECT "+agentGroupCols+" FROM agent_groups ORDER BY name, id", nil, []sessiondb.AgentGroup{}, scanAgentGroup)
	return out, c.wrap(err, "list agent groups")
}

// UpdateAgentGroup implements sessiondb.AgentGroupService.
func (c *Registry) UpdateAgentGroup(ctx context.Context, id string, u sessiondb.AgentGroupUpdate) (sessiondb.AgentGroup, error) {
	if err := u.Validate(); err != nil {
		return sessiondb.AgentGroup{}, err
	}
	var g sessiondb.AgentGroup
	err := c.write(ctx, "update agent group", func(tx Tx) error {
		var err error
		if g, err = one(c, tx.Context(), tx, "agent group", id, "SELECT "+agentGroupCols+" FROM agent_groups WHERE id = ?", []any{id}, scanAgentGroup); err != nil {
			return err
		}
		if u.Name != nil {
			g.Name = *u.Name
		}
		if u.AgentProvider != nil {
			g.AgentProvider = *u.AgentProvider
		}
		_, err = tx.Exec("UPDATE agent_groups SET name = ?, agent_provider = ? WHERE id = ?", g.Name, nullText(g.AgentProvider), id)
		return err
	})
	return g, err
}

// DeleteAgentGroup implements sessiondb.AgentGroupService.
func (c *Registry) DeleteAgentGroup(ctx context.Context, id string) error {
	return c.deleteUnlessInSessions(ctx, "agent group", id, "agent_groups", "agent_group_id", "group", []string{
		"DELETE FROM pending_approvals WHERE agent_group_id = ?",
		"DELETE FROM pending_sender_approvals WHERE agent_group_id = ?",
		"DELETE FROM pending_channel_approvals WHERE agent_group_id = ?",
		"DELETE FROM agent_destinations WHERE agent_group_id = ?1 OR (target_type = 'agent' AND target_id = ?1)",
		"DELETE FROM messaging_group_agents WHERE agent_group_id = ?",
		"DELETE FROM user_roles WHERE agent_group_id = ?",
		"DELETE FROM agent_group_members WHERE agent_group_id = ?",
		"DELETE FROM container_configs WHERE agent_group_id = ?",
		"DELETE FROM agent_groups WHERE id = ?",
	})
}

// deleteUnlessInSessions deletes the kind row id of table by running
// deletes, each with id for its placeholders, in one transaction: the
// statements that remove what refers to it, then the row itself. It is
// not_found when there is no such row, and a conflict while a session
// names it in column sessionCol: sessions are never deleted, so the row
// stays (the message calls it stays: "group", "chat").
func (c *Registry) deleteUnlessInSessions(ctx context.Context, kind, id, table, sessionCol, stays string, deletes []string) error {
	return c.write(ctx, "delete "+kind, func(tx Tx) error {
		ctx := tx.Context()
		if err := mustExist(ctx, tx, kind, table, id); err != nil {
			return err
		}
		if has, err := hasRow(ctx, tx, "SELECT 1 FROM sessions WHERE "+sessionCol+" = ?", id); err != nil || has {
			return orConflict(err, "%s %q still has sessions; sessions are never deleted, so the %s stays", kind, id, stays)
		}
		for _, q := range deletes {
			if _, err := tx.Exec(q, id); err != nil {
				return err
			}
		}
		return nil
	})
}

const messagingGroupCols = "id, channel_type, platform_id, name, is_group, unknown_sender_policy, created_at, denied_at"

func scanMessagingGroup(r Scanner) (sessiondb.MessagingGroup, error) {
	var m sessiondb.MessagingGroup
	var isGroup sql.NullInt64
	var policy string
	err := r.Scan(&m.ID, &m.ChannelType, &m.PlatformID, intoText(&m.Name), &isGroup, &policy, IntoTime(&m.CreatedAt), IntoTime(&m.DeniedAt))
	m.IsGroup, m.UnknownSenderPolicy = isGroup.Int64 != 0, sessiondb.UnknownSenderPolicy(policy)
	return m, err
}

// insertMessagingGroup inserts a chat built from n (validated) and
// returns it as stored.
func (c *Registry) insertMessagingGroup(tx Tx, n sessiondb.NewMessagingGroup, now string) (sessiondb.MessagingGroup, error) {
	if n.UnknownSenderPolicy == "" {
		n.UnknownSenderPolicy = sessiondb.PolicyStrict
	}
	if n.ID == "" {
		t, _ := sessiondb.ParseTimestamp(now)
		n.ID = sessiondb.NewID("mg", t)
	}
	if taken, err := hasRow(tx.Context(), tx, "SELECT 1 FROM messaging_groups WHERE id = ?", n.ID); err != nil || taken {
		return sessiondb.MessagingGroup{}, orConflict(err, "messaging group id %q is taken", n.ID)
	}
	isGroup := 0
	if n.IsGroup {
		isGroup = 1
	}
	if _, err := tx.Exec("INSERT INTO messaging_groups (id, channel_type, platform_id, name, is_group, unknown_sender_policy, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		n.ID, n.ChannelType, n.PlatformID, nullText(n.Name), isGroup, string(n.UnknownSenderPolicy), now); err != nil {
		return sessiondb.MessagingGroup{}, err
	}
	return one(c, tx.Context(), tx, "messaging group", n.ID, "SELECT "+messagingGroupCols+" FROM messaging_groups WHERE id = ?", []any{n.ID}, scanMessagingGroup)
}

func findChat(tx Tx, channelType, platformID string) ([]sessiondb.MessagingGroup, error) {
	return AppendRows(tx.Context(), tx, "SELECT "+messagingGroupCols+" FROM messaging_groups WHERE channel_type = ? AND platform_id = ?",
		[]any{channelType, platformID}, nil, scanMessagingGroup)
}

// CreateMessagingGroup implements sessiondb.MessagingGroupService.
func (c *Registry) CreateMessagingGroup(ctx context.Context, n sessiondb.NewMessagingGroup) (sessiondb.MessagingGroup, error) {
	if err := n.Validate(); err != nil {
		return sessiondb.MessagingGroup{}, err
	}
	var m sessiondb.MessagingGroup
	err := c.write(ctx, "create messaging group", func(tx Tx) error {
		found, err := findChat(tx, n.ChannelType, n.PlatformID)
		if err != nil || len(found) > 0 {
			return orConflict(err, "chat %s %q is already messaging group %q", n.ChannelType, n.PlatformID, firstID(found))
		}
		m, err = c.insertMessagingGroup(tx, n, c.stamp())
		return err
	})
	return m, err
}

func firstID(ms []sessiondb.MessagingGroup) string {
	if len(ms) == 0 {
		return ""
	}
	return ms[0].ID
}

// EnsureMessagingGroup implements sessiondb.MessagingGroupService.
func (c *Registry) EnsureMessagingGroup(ctx context.Context, n sessiondb.NewMessagingGroup) (sessiondb.MessagingGroup, bool, error) {
	if err := n.Validate(); err != nil {
		return sessiondb.MessagingGroup{}, false, err
	}
	if m, err := c.FindMessagingGroup(ctx, n.ChannelType, n.PlatformID); err == nil || sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		return m, false, err
	}
	var m sessiondb.MessagingGroup
	created := false
	err := c.write(ctx, "ensure messaging group", func(tx Tx) error {
		found, err := findChat(tx, n.ChannelType, n.PlatformID)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			m, created = found[0], false
			return nil
		}
		m, created = sessiondb.MessagingGroup{}, true
		m, err = c.insertMessagingGroup(tx, n, c.stamp())
		return err
	})
	return m, created, err
}

// GetMessagingGroup implements sessiondb.MessagingGroupService.
func (c *Registry) GetMessagingGroup(ctx context.Context, id string) (sessiondb.MessagingGroup, error) {
	return one(c, ctx, c.rq, "messaging group", id, "SELECT "+messagingGroupCols+" FROM messaging_groups WHERE id = ?", []any{id}, scanMessagingGroup)
}

// FindMessagingGroup implements sessiondb.MessagingGroupService.
func (c *Registry) FindMessagingGroup(ctx context.Context, channelType, platformID string) (sessiondb.MessagingGroup, error) {
	return one(c, ctx, c.rq, "messaging group", channelType+":"+platformID,
		"SELECT "+messagingGroupCols+" FROM messaging_groups WHERE channel_type = ? AND platform_id = ?", []any{channelType, platformID}, scanMessagingGroup)
}

// ListMessagingGroups implements sessiondb.MessagingGroupService.
func (c *Registry) ListMessagingGroups(ctx context.Context, f sessiondb.MessagingGroupFilter) ([]sessiondb.MessagingGroup, error) {
	q := "SELECT " + messagingGroupCols + " FROM messaging_groups"
	var args []any
	if f.ChannelType != "" {
		q += " WHERE channel_type = ?"
		args = append(args, f.ChannelType)
	}
	q += " ORDER BY name IS NULL OR name = '', name, channel_type, platform_id"
	out, err := AppendRows(ctx, c.rq, q, args, []sessiondb.MessagingGroup{}, scanMessagingGroup)
	return out, c.wrap(err, "list messaging groups")
}

// UpdateMessagingGroup implements sessiondb.MessagingGroupService.
func (c *Registry) UpdateMessagingGroup(ctx context.Context, id string, u sessiondb.MessagingGroupUpdate) (sessiondb.MessagingGroup, error) {
	if err := u.Validate(); err != nil {
		return sessiondb.MessagingGroup{}, err
	}
	var m sessiondb.MessagingGroup
	err := c.write(ctx, "update messaging group", func(tx Tx) error {
		get := func() (sessiondb.MessagingGroup, error) {
			return one(c, tx.Context(), tx, "messaging group", id, "SELECT "+messagingGroupCols+" FROM messaging_groups WHERE id = ?", []any{id}, scanMessagingGroup)
		}
		if _, err := get(); err != nil {
			return err
		}
		set := func(col string, v any) error {
			_, err := tx.Exec(fmt.Sprintf("UPDATE messaging_groups SET %s = ? WHERE id = ?", col), v, id)
			return err
		}
		if u.Name != nil {
			if err := set("name", nullText(*u.Name)); err != nil {
				return err
			}
		}
		if u.IsGroup != nil {
			v := 0
			if *u.IsGroup {
				v = 1
			}
			if err := set("is_group", v); err != nil {
				return err
			}
		}
		if u.UnknownSenderPolicy != nil {
			if err := set("unknown_sender_policy", string(*u.UnknownSenderPolicy)); err != nil {
				return err
			}
		}
		if u.Denied != nil {
			q := "UPDATE messaging_groups SET denied_at = NULL WHERE id = ?"
			args := []any{id}
			if *u.Denied {
				q = "UPDATE messaging_groups SET denied_at = COALESCE(denied_at, ?) WHERE id = ?"
				args = []any{c.stamp(), id}
			}
			if _, err := tx.Exec(q, args...); err != nil {
				return err
			}
		}
		var err error
		m, err = get()
		return err
	})
	return m, err
}

// DeleteMessagingGroup implements sessiondb.MessagingGroupService.
func (c *Registry) DeleteMessagingGroup(ctx context.Context, id string) error {
	return c.deleteUnlessInSessions(ctx, "messaging group", id, "messaging_groups", "messaging_group_id", "chat", []string{
		"DELETE FROM pending_sender_approvals WHERE messaging_group_id = ?",
		"DELETE FROM pending_channel_approvals WHERE messaging_group_id = ?",
		"DELETE FROM agent_destinations WHERE target_type = 'channel' AND target_id = ?",
		"DELETE FROM user_dms WHERE messaging_group_id = ?",
		"DELETE FROM messaging_group_agents WHERE messaging_group_id = ?",
		"DELETE FROM messaging_groups WHERE id = ?",
	})
}

const wiringCols = "id, messaging_group_id, agent_group_id, engage_mode, engage_pattern, sender_scope, ignored_message_policy, session_mode, priority, created_at"

func scanWiring(r Scanner) (sessiondb.Wiring, error) {
	var w sessiondb.Wiring
	var prio sql.NullInt64
	err := r.Scan(&w.ID, &w.MessagingGroupID, &w.AgentGroupID, intoText(&w.EngageMode), intoText(&w.EngagePattern), intoText(&w.SenderScope),
		intoText(&w.IgnoredMessagePolicy), intoText(&w.SessionMode), &prio, IntoTime(&w.CreatedAt))
	w.Priority = int(prio.Int64)
	return w.WithDefaults(), err
}

// CreateWiring implements sessiondb.WiringService.
func (c *Registry) CreateWiring(ctx context.Context, n sessiondb.NewWiring) (sessiondb.Wired, error) {
	if err := n.Validate(); err != nil {
		return sessiondb.Wired{}, err
	}
	n = n.Normalized()
	now := c.now()
	if n.ID == "" {
		n.ID = sessiondb.NewID("mga", now)
	}
	var out sessiondb.Wired
	err := c.write(ctx, "create wiring", func(tx Tx) error {
		ctx := tx.Context()
		chat, err := one(c, ctx, tx, "messaging group", n.MessagingGroupID, "SELECT "+messagingGroupCols+" FROM messaging_groups WHERE id = ?", []any{n.MessagingGroupID}, scanMessagingGroup)
		if err != nil {
			return err
		}
		if err := mustExist(ctx, tx, "agent group", "agent_groups", n.AgentGroupID); err != nil {
			return err
		}
		if taken, err := hasRow(ctx, tx, "SELECT 1 FROM messaging_group_agents WHERE messaging_group_id = ? AND agent_group_id = ?", n.MessagingGroupID, n.AgentGroupID); err != nil || taken {
			return orConflict(err, "agent group %q is already wired to messaging group %q", n.AgentGroupID, n.MessagingGroupID)
		}
		if taken, err := hasRow(ctx, tx, "SELECT 1 FROM messaging_group_agents WHERE id = ?", n.ID); err != nil || taken {
			return orConflict(err, "wiring id %q is taken", n.ID)
		}
		stamp := sessiondb.FormatTimestamp(now)
		if _, err := tx.Exec("INSERT INTO messaging_group_agents ("+wiringCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			n.ID, n.MessagingGroupID, n.AgentGroupID, string(n.EngageMode), nullText(n.EngagePattern), string(n.SenderScope),
			string(n.IgnoredMessagePolicy), string(n.SessionMode), n.Priority, stamp); err != nil {
			return err
		}
		if out.Wiring, err = one(c, ctx, tx, "wiring", n.ID, "SELECT "+wiringCols+" FROM messaging_group_agents WHERE id = ?", []any{n.ID}, scanWiring); err != nil {
			return err
		}
		out.Destination = nil
		has, err := hasRow(ctx, tx, "SELECT 1 FROM agent_destinations WHERE agent_group_id = ? AND target_type = 'channel' AND target_id = ?", n.AgentGroupID, n.MessagingGroupID)
		if err != nil || has {
			return err
		}
		names, err := AppendRows(ctx, tx, "SELECT local_name FROM agent_destinations WHERE agent_group_id = ?", []any{n.AgentGroupID}, nil, valueOf[string])
		if err != nil {
			return err
		}
		taken := map[string]bool{}
		for _, name := range names {
			taken[name] = true
		}
		d := sessiondb.Destination{AgentGroupID: n.AgentGroupID, TargetType: sessiondb.TargetChannel, TargetID: n.MessagingGroupID,
			LocalName: sessiondb.UniqueLocalName(sessiondb.DestinationBaseName(chat), func(s string) bool { return taken[s] })}
		if _, err := tx.Exec("INSERT INTO agent_destinations (agent_group_id, local_name, target_type, target_id, created_at) VALUES (?, ?, 'channel', ?, ?)",
			d.AgentGroupID, d.LocalName, d.TargetID, stamp); err != nil {
			return err
		}
		d.CreatedAt, _ = sessiondb.ParseTimestamp(stamp)
		out.Destination = &d
		return nil
	})
	if err != nil {
		return sessiondb.Wired{}, err
	}
	return out, nil
}

// GetWiring implements sessiondb.WiringService.
func (c *Registry) GetWiring(ctx context.Context, id string) (sessiondb.Wiring, error) {
	return one(c, ctx, c.rq, "wiring", id, "SELECT "+wiringCols+" FROM messaging_group_agents WHERE id = ?", []any{id}, scanWiring)
}

// ListWirings implements sessiondb.WiringService.
func (c *Registry) ListWirings(ctx context.Context, f sessiondb.WiringFilter) ([]sessiondb.Wiring, error) {
	var w where
	w.equal("messaging_group_id", f.MessagingGroupID)
	w.equal("agent_group_id", f.AgentGroupID)
	out, err := AppendRows(ctx, c.rq, "SELECT "+wiringCols+" FROM messaging_group_agents"+w.String()+" ORDER BY COALESCE(priority, 0) DESC, created_at, id", w.args,
		[]sessiondb.Wiring{}, scanWiring)
	return out, c.wrap(err, "list wirings")
}

// UpdateWiring implements sessiondb.WiringService.
func (c *Registry) UpdateWiring(ctx context.Context, id string, u sessiondb.WiringUpdate) (sessiondb.Wiring, error) {
	var w sessiondb.Wiring
	err := c.write(ctx, "update wiring", func(tx Tx) error {
		old, err := one(c, tx.Context(), tx, "wiring", id, "SELECT "+wiringCols+" FROM messaging_group_agents WHERE id = ?", []any{id}, scanWiring)
		if err != nil {
			return err
		}
		if w, err = u.Apply(old); err != nil {
			return err
		}
		_, err = tx.Exec(`UPDATE messaging_group_agents SET engage_mode = ?, engage_pattern = ?, sender_scope = ?,
ignored_message_policy = ?, session_mode = ?, priority = ? WHERE id = ?`,
			string(w.EngageMode), nullText(w.EngagePattern), string(w.SenderScope), string(w.IgnoredMessagePolicy), string(w.SessionMode), w.Priority, id)
		return err
	})
	if err != nil {
		return sessiondb.Wiring{}, err
	}
	return w, nil
}

// DeleteWiring implements sessiondb.WiringService.
func (c *Registry) DeleteWiring(ctx context.Context, id string) error {
	return c.changeOne(ctx, "delete wiring", "wiring", id, "DELETE FROM messaging_group_agents WHERE id = ?", id)
}
