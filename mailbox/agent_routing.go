package mailbox

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// RouteTo returns the routing for a send to the destination name, or to the
// default target when name is empty (DefaultRouting). The session's thread
// id is kept only when the target is the session's own chat. An unknown
// name is a not_found error listing the known names.
func (a *Agent) RouteTo(ctx context.Context, name string) (Routing, error) {
	own, err := a.SessionRouting(ctx)
	if err != nil {
		return Routing{}, err
	}
	var r Routing
	if name == "" {
		if r, err = a.defaultRouting(ctx, own); err != nil {
			return Routing{}, err
		}
	} else {
		d, err := a.Destination(ctx, name)
		if err != nil {
			return Routing{}, err
		}
		r = d.Routing()
	}
	r.ThreadID = ""
	if r.ChannelType == own.ChannelType && r.PlatformID == own.PlatformID {
		r.ThreadID = own.ThreadID
	}
	return r, nil
}

// SessionRouting returns session_routing row 1 (zero when absent, also when
// an older inbound.db has no such table).
func (a *Agent) SessionRouting(ctx context.Context) (Routing, error) {
	var r Routing
	err := a.withInbound(ctx, func(q queryer) error {
		var err error
		r, err = readSessionRouting(q)
		return err
	})
	return r, err
}

// SessionRouting reads the session_routing row the host projected (zero
// when absent).
func (h *Host) SessionRouting(ctx context.Context, ref SessionRef) (Routing, error) {
	if err := ref.Validate(); err != nil {
		return Routing{}, err
	}
	var r Routing
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		r, err = readSessionRouting(tx)
		return err
	})
	return r, err
}

// readSessionRouting reads session_routing row 1; a file without the
// table reads as no routing.
func readSessionRouting(q queryer) (Routing, error) {
	var r Routing
	cols, err := columns(q, "session_routing")
	if err != nil || len(cols) == 0 {
		return r, err
	}
	err = each(q, "SELECT channel_type, platform_id, thread_id FROM session_routing WHERE id = 1", nil, func(row sqlitedb.Row) error {
		var ct, pid, tid sql.NullString
		if err := row.Scan(&ct, &pid, &tid); err != nil {
			return err
		}
		r = Routing{ct.String, pid.String, tid.String}
		return nil
	})
	return r, err
}

// DefaultRouting is where a send without a target goes: session_routing if
// set, else the single destination if exactly one exists; not_found
// otherwise.
func (a *Agent) DefaultRouting(ctx context.Context) (Routing, error) {
	r, err := a.SessionRouting(ctx)
	if err != nil {
		return Routing{}, err
	}
	return a.defaultRouting(ctx, r)
}

// defaultRouting is DefaultRouting given the session_routing row r already
// read.
func (a *Agent) defaultRouting(ctx context.Context, r Routing) (Routing, error) {
	if r.ChannelType != "" || r.PlatformID != "" {
		return r, nil
	}
	ds, err := a.Destinations(ctx)
	if err != nil {
		return Routing{}, err
	}
	if len(ds) == 1 {
		return ds[0].Routing(), nil
	}
	return Routing{}, sessiondb.Errorf(sessiondb.ENOTFOUND, "no default target: session_routing is empty and there are %d destinations", len(ds))
}

// Routing returns where a message to d goes: its channel, or for an agent
// destination channel_type 'agent' and the target agent group.
func (d Destination) Routing() Routing {
	if d.Type == DestinationAgent {
		return Routing{ChannelType: ChannelAgent, PlatformID: d.AgentGroupID}
	}
	return Routing{ChannelType: d.ChannelType, PlatformID: d.PlatformID}
}

// Destinations lists the destinations table by name (empty when the table
// is missing).
func (a *Agent) Destinations(ctx context.Context) ([]Destination, error) {
	var out []Destination
	err := a.withInbound(ctx, func(q queryer) error {
		cols, err := columns(q, "destinations")
		if err != nil || len(cols) == 0 {
			return err
		}
		out, err = readDestinations(q)
		return err
	})
	return out, err
}

// Destination resolves a destination name; unknown → not_found listing the
// known names.
func (a *Agent) Destination(ctx context.Context, name string) (Destination, error) {
	ds, err := a.Destinations(ctx)
	if err != nil {
		return Destination{}, err
	}
	names := make([]string, 0, len(ds))
	for _, d := range ds {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	known := "none"
	if len(names) > 0 {
		known = strings.Join(names, ", ")
	}
	return Destination{}, sessiondb.Errorf(sessiondb.ENOTFOUND, "unknown destination %q (known: %s)", errtext.Clip(name, 64), known)
}
