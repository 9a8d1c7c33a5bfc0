package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// PrepareSpawn readies a session for a fresh container: deletes .heartbeat
// (absent = fresh spawn for the stuck check), writes session_routing and
// destinations, and enqueues s.OnWake rows with on_wake=1, in one inbound
// transaction.
func (h *Host) PrepareSpawn(ctx context.Context, ref SessionRef, s Spawn) error {
	hb, err := h.layout.HeartbeatPath(ref)
	if err != nil {
		return err
	}
	if err := checkRouting(s.Routing); err != nil {
		return err
	}
	if err := checkDestinations(s.Destinations); err != nil {
		return err
	}
	contents := make([][]byte, len(s.OnWake))
	for i := range s.OnWake {
		s.OnWake[i].OnWake = true
		c, err := h.checkInbound(&s.OnWake[i])
		if err != nil {
			return err
		}
		contents[i] = c
	}
	if err := os.Remove(hb); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "remove %s", hb)
	}
	return h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		if err := writeRouting(tx, s.Routing); err != nil {
			return err
		}
		if err := writeDestinations(tx, s.Destinations); err != nil {
			return err
		}
		for i, m := range s.OnWake {
			if _, _, err := h.insertInbound(ctx, tx, ref, m, contents[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func checkDestinations(ds []Destination) error {
	seen := map[string]bool{}
	for i, d := range ds {
		field := fmt.Sprintf("destinations[%d]", i)
		if d.Name == "" {
			return sessiondb.Errorf(sessiondb.EINVALID, "%s.name is empty", field)
		}
		if seen[d.Name] {
			return sessiondb.Errorf(sessiondb.EINVALID, "%s.name %q is given twice", field, d.Name)
		}
		seen[d.Name] = true
		for _, f := range []struct{ n, v string }{{"name", d.Name}, {"display_name", d.DisplayName}, {"channel_type", d.ChannelType}, {"platform_id", d.PlatformID}, {"agent_group_id", d.AgentGroupID}} {
			if err := checkText(field+"."+f.n, f.v); err != nil {
				return err
			}
		}
		switch d.Type {
		case DestinationChannel:
			if d.ChannelType == "" || d.PlatformID == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "%s (%q): a channel destination needs channel_type and platform_id", field, d.Name)
			}
		case DestinationAgent:
			if d.AgentGroupID == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "%s (%q): an agent destination needs agent_group_id", field, d.Name)
			}
		default:
			return sessiondb.Errorf(sessiondb.EINVALID, "%s.type %q: want channel or agent", field, d.Type)
		}
	}
	return nil
}

func writeDestinations(tx *sqlitedb.Tx, ds []Destination) error {
	if _, err := tx.Exec("DELETE FROM destinations"); err != nil {
		return err
	}
	for _, d := range ds {
		if _, err := tx.Exec(`INSERT INTO destinations (name, display_name, type, channel_type, platform_id, agent_group_id)
 VALUES (?, ?, ?, ?, ?, ?)`, d.Name, nullStr(d.DisplayName), d.Type, nullStr(d.ChannelType), nullStr(d.PlatformID), nullStr(d.AgentGroupID)); err != nil {
			return err
		}
	}
	return nil
}

func writeRouting(tx *sqlitedb.Tx, r Routing) error {
	_, err := tx.Exec(`INSERT INTO session_routing (id, channel_type, platform_id, thread_id) VALUES (1, ?, ?, ?)
 ON CONFLICT(id) DO UPDATE SET channel_type = excluded.channel_type, platform_id = excluded.platform_id, thread_id = excluded.thread_id`,
		nullStr(r.ChannelType), nullStr(r.PlatformID), nullStr(r.ThreadID))
	return err
}

// WriteDestinations rewrites the destinations table wholesale (DELETE and
// INSERTs in one transaction).
func (h *Host) WriteDestinations(ctx context.Context, ref SessionRef, ds []Destination) error {
	if err := checkDestinations(ds); err != nil {
		return err
	}
	return h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error { return writeDestinations(tx, ds) })
}

// Destinations reads the destinations table of the session's inbound.db
// (the projection PrepareSpawn and WriteDestinations write), by name.
func (h *Host) Destinations(ctx context.Context, ref SessionRef) ([]Destination, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	var out []Destination
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		out, err = readDestinations(tx)
		return err
	})
	return out, err
}

// WriteSessionRouting upserts session_routing row 1 (empty fields → NULL).
func (h *Host) WriteSessionRouting(ctx context.Context, ref SessionRef, r Routing) error {
	if err := checkRouting(r); err != nil {
		return err
	}
	return h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error { return writeRouting(tx, r) })
}

// readDestinations reads the destinations table by name.
func readDestinations(q queryer) ([]Destination, error) {
	return collect(q, "SELECT name, display_name, type, channel_type, platform_id, agent_group_id FROM destinations ORDER BY name", nil, func(row sqlitedb.Row) (Destination, error) {
		var d Destination
		var dn, ct, pid, ag sql.NullString
		err := row.Scan(&d.Name, &dn, &d.Type, &ct, &pid, &ag)
		d.DisplayName, d.ChannelType, d.PlatformID, d.AgentGroupID = dn.String, ct.String, pid.String, ag.String
		return d, err
	})
}
