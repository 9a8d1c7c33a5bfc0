package mailbox

import (
	"context"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// InboundRows lists messages_in rows newest first (limit ≤ 0: all), for
// inspection.
func (h *Host) InboundRows(ctx context.Context, ref SessionRef, limit int) ([]InboundRow, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1
	}
	var out []InboundRow
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		out, err = collectInbound(tx, "SELECT "+inboundCols+" FROM messages_in ORDER BY seq IS NULL, seq DESC, timestamp DESC LIMIT ?", limit)
		return err
	})
	return out, err
}

// OutboundRows lists messages_out rows newest first (limit ≤ 0: all), for
// inspection.
func (h *Host) OutboundRows(ctx context.Context, ref SessionRef, limit int) ([]OutboundRow, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1
	}
	var out []OutboundRow
	err := h.withOutboundRO(ctx, ref, func(q queryer) error {
		var err error
		out, err = collect(q, "SELECT "+outboundCols+" FROM messages_out ORDER BY seq IS NULL, seq DESC, timestamp DESC LIMIT ?", []any{limit}, func(row sqlitedb.Row) (OutboundRow, error) {
			return scanOutbound(row)
		})
		return err
	})
	return out, err
}

// SessionFolders returns the refs of folders <root>/<group>/<session> with
// safe names, in name order, whether or not they hold a mailbox yet (see
// Sessions). It reads folders only.
func (h *Host) SessionFolders(ctx context.Context) ([]SessionRef, error) {
	// os.ReadDir returns names sorted, so the refs come out in order.
	groups, err := os.ReadDir(h.layout.Root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "list %s", h.layout.Root)
	}
	var refs []SessionRef
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The host's own files (and a folder of a temporary one) are
		// never an agent group.
		if !g.IsDir() || sessiondb.CheckAgentGroupID("agent_group_id", g.Name()) != nil {
			continue
		}
		sess, err := os.ReadDir(filepath.Join(h.layout.Root, g.Name()))
		if err != nil {
			h.log.Warn("mailbox: cannot list agent group folder", "group", g.Name(), "err", err)
			continue
		}
		for _, s := range sess {
			if !s.IsDir() || ValidateName("session_id", s.Name()) != nil {
				continue
			}
			refs = append(refs, SessionRef{AgentGroupID: g.Name(), SessionID: s.Name()})
		}
	}
	return refs, nil
}

// Sessions lists the session folders under the root: folders with safe
// names that hold an inbound.db.
func (h *Host) Sessions(ctx context.Context) ([]SessionRef, error) {
	refs, err := h.SessionFolders(ctx)
	if err != nil {
		return nil, err
	}
	out := refs[:0]
	for _, r := range refs {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p, _ := h.layout.InboundPath(r)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, r)
		}
	}
	return out, nil
}
