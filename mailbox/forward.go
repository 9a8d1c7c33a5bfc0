package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"os"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// InboundRow returns the messages_in row with the given id (not_found when
// absent), e.g. to find the source_session_id an agent-to-agent reply goes
// back to.
func (h *Host) InboundRow(ctx context.Context, ref SessionRef, id string) (InboundRow, error) {
	var r InboundRow
	found := false
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		rows, err := collectInbound(tx, "SELECT "+inboundCols+" FROM messages_in WHERE id = ?", id)
		if len(rows) > 0 {
			r, found = rows[0], true
		}
		return err
	})
	if err == nil && !found {
		err = sessiondb.Errorf(sessiondb.ENOTFOUND, "session %s: no inbound message %q", ref, errtext.Clip(id, 64))
	}
	return r, err
}

// PeerSource returns the source_session_id of the newest (highest seq)
// agent-to-agent row in session ref from agent group peer that carries
// one, "" when none does: the session of peer that last talked to this
// one, where NanoClaw sends a reply to peer that names no message
// (getMostRecentPeerSourceSessionId, its peer affinity).
func (h *Host) PeerSource(ctx context.Context, ref SessionRef, peer string) (string, error) {
	var id sql.NullString
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		err := tx.QueryRow(`SELECT source_session_id FROM messages_in WHERE channel_type = ? AND platform_id = ?
 AND source_session_id IS NOT NULL ORDER BY seq DESC LIMIT 1`, ChannelAgent, peer).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return id.String, err
}

// Forward writes an agent-to-agent message: row (delivered from session
// src) becomes a kind='chat' row in session dst with channel_type 'agent',
// platform_id = src's agent group, source_session_id = src's session, and
// its outbox files copied to dst's inbox/<new id>/ as attachments. It
// returns the new row's id and seq.
func (h *Host) Forward(ctx context.Context, src SessionRef, row OutboundRow, dst SessionRef) (string, int64, error) {
	if err := src.Validate(); err != nil {
		return "", 0, err
	}
	dstDir, err := h.layout.SessionDir(dst)
	if err != nil {
		return "", 0, err
	}
	now := h.now()
	id := NewID("msg", now)
	o, err := parseObject("content", row.Content)
	if err != nil {
		return "", 0, Permanent(err)
	}
	if len(row.Files) > 0 {
		var atts []map[string]string
		for _, f := range row.Files {
			data, err := os.ReadFile(f.Path)
			if err != nil {
				return "", 0, sessiondb.Wrap(sessiondb.EINTERNAL, err, "read outbox file %s", f.Name)
			}
			rel, _, err := writeExclusive(dstDir, []string{InboxDirName, id}, f.Name, data, h.modes)
			if err != nil {
				return "", 0, err
			}
			atts = append(atts, map[string]string{"name": f.Name, "filename": f.Name, "type": "file", "localPath": rel})
		}
		o.del("files")
		o.set("attachments", marshalCompact(atts))
	}
	seq, _, err := h.Enqueue(ctx, dst, InboundMessage{ID: id, Kind: KindChat, Content: o.marshal(), Timestamp: now,
		Routing: Routing{ChannelType: ChannelAgent, PlatformID: src.AgentGroupID}, SourceSessionID: src.SessionID})
	return id, seq, err
}
