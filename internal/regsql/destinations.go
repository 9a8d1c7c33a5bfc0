package regsql

import (
	"context"
	"database/sql"

	"github.com/sessiondb/sessiondb"
)

// The destinations ACL (spec A8).

const destinationCols = "agent_group_id, local_name, target_type, target_id, created_at"

func scanDestination(r Scanner) (sessiondb.Destination, error) {
	var d sessiondb.Destination
	var tt string
	err := r.Scan(&d.AgentGroupID, &d.LocalName, &tt, &d.TargetID, IntoTime(&d.CreatedAt))
	d.TargetType = sessiondb.TargetType(tt)
	return d, err
}

// AddDestination implements sessiondb.DestinationService.
func (c *Registry) AddDestination(ctx context.Context, n sessiondb.NewDestination) (sessiondb.Destination, error) {
	if err := n.Validate(); err != nil {
		return sessiondb.Destination{}, err
	}
	var d sessiondb.Destination
	err := c.write(ctx, "add destination", func(tx Tx) error {
		ctx := tx.Context()
		if err := mustExist(ctx, tx, "agent group", "agent_groups", n.AgentGroupID); err != nil {
			return err
		}
		what, table := "messaging group", "messaging_groups"
		if n.TargetType == sessiondb.TargetAgent {
			what, table = "agent group", "agent_groups"
		}
		if err := mustExist(ctx, tx, what, table, n.TargetID); err != nil {
			return err
		}
		if taken, err := hasRow(ctx, tx, "SELECT 1 FROM agent_destinations WHERE agent_group_id = ? AND local_name = ?", n.AgentGroupID, n.LocalName); err != nil || taken {
			return orConflict(err, "agent group %q already has a destination named %q", n.AgentGroupID, n.LocalName)
		}
		if _, err := tx.Exec("INSERT INTO agent_destinations ("+destinationCols+") VALUES (?, ?, ?, ?, ?)",
			n.AgentGroupID, n.LocalName, string(n.TargetType), n.TargetID, c.stamp()); err != nil {
			return err
		}
		var err error
		d, err = one(c, ctx, tx, "destination", n.LocalName, "SELECT "+destinationCols+" FROM agent_destinations WHERE agent_group_id = ? AND local_name = ?",
			[]any{n.AgentGroupID, n.LocalName}, scanDestination)
		return err
	})
	return d, err
}

// RemoveDestination implements sessiondb.DestinationService.
func (c *Registry) RemoveDestination(ctx context.Context, agentGroupID, localName string) error {
	return c.changeOne(ctx, "remove destination", "destination", agentGroupID+"/"+localName,
		"DELETE FROM agent_destinations WHERE agent_group_id = ? AND local_name = ?", agentGroupID, localName)
}

// ListDestinations implements sessiondb.DestinationService.
func (c *Registry) ListDestinations(ctx context.Context, agentGroupID string) ([]sessiondb.Destination, error) {
	out, err := AppendRows(ctx, c.rq, "SELECT "+destinationCols+" FROM agent_destinations WHERE agent_group_id = ? ORDER BY local_name",
		[]any{agentGroupID}, []sessiondb.Destination{}, scanDestination)
	return out, c.wrap(err, "list destinations")
}

// ResolveDestinations implements sessiondb.DestinationService: one query,
// so one snapshot.
func (c *Registry) ResolveDestinations(ctx context.Context, agentGroupID string) ([]sessiondb.ResolvedDestination, error) {
	const q = `SELECT d.agent_group_id, d.local_name, d.target_type, d.target_id, d.created_at,
  mg.id, mg.channel_type, mg.platform_id, mg.name, mg.is_group, mg.unknown_sender_policy, mg.created_at, mg.denied_at,
  ag.id, ag.name, ag.folder, ag.agent_provider, ag.created_at
FROM agent_destinations d
LEFT JOIN messaging_groups mg ON d.target_type = 'channel' AND mg.id = d.target_id
LEFT JOIN agent_groups ag ON d.target_type = 'agent' AND ag.id = d.target_id
WHERE d.agent_group_id = ? ORDER BY d.local_name`
	out, err := AppendRows(ctx, c.rq, q, []any{agentGroupID}, []sessiondb.ResolvedDestination{}, func(r Scanner) (sessiondb.ResolvedDestination, error) {
		var d sessiondb.ResolvedDestination
		var tt string
		var mgID, agID sql.NullString
		var mgIsGroup sql.NullInt64
		var mg sessiondb.MessagingGroup
		var ag sessiondb.AgentGroup
		err := r.Scan(&d.AgentGroupID, &d.LocalName, &tt, &d.TargetID, IntoTime(&d.CreatedAt),
			&mgID, intoText(&mg.ChannelType), intoText(&mg.PlatformID), intoText(&mg.Name), &mgIsGroup,
			intoText(&mg.UnknownSenderPolicy), IntoTime(&mg.CreatedAt), IntoTime(&mg.DeniedAt),
			&agID, intoText(&ag.Name), intoText(&ag.Folder), intoText(&ag.AgentProvider), IntoTime(&ag.CreatedAt))
		d.TargetType = sessiondb.TargetType(tt)
		if mgID.Valid {
			mg.ID, mg.IsGroup = mgID.String, mgIsGroup.Int64 != 0
			d.Chat = &mg
		}
		if agID.Valid {
			ag.ID = agID.String
			d.Agent = &ag
		}
		return d, err
	})
	return out, c.wrap(err, "resolve destinations")
}
