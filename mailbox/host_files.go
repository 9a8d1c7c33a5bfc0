package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// withInbound runs fn in a write transaction on the session's inbound.db,
// through the session's batch writer (inboundWriter): the file is opened
// for the transaction and closed after it, and the operations that arrive
// while it opens, or while an earlier transaction commits, share the
// transaction and its commit, each undone alone if it fails. The first
// write by this Host runs the lazy migrations.
func (h *Host) withInbound(ctx context.Context, ref SessionRef, fn func(tx *sqlitedb.Tx) error) error {
	path, err := h.layout.InboundPath(ref)
	if err != nil {
		return err
	}
	s := h.session(ref)
	h.mu.Lock()
	migrated := s.migrated
	if s.inbound == nil {
		s.inbound = h.inboundWriter(ref, path)
	}
	w := s.inbound
	h.mu.Unlock()
	err = w.Do(ctx, func(tx *sqlitedb.Tx) error {
		if !migrated {
			if err := migrateInbound(tx); err != nil {
				return sqlitedb.Wrap(err, "migrate %s", path)
			}
		}
		return fn(tx)
	})
	if err != nil {
		if errCode(err) == "" {
			return sqlitedb.Wrap(err, "session %s: inbound", ref)
		}
		return err
	}
	if !migrated {
		h.mu.Lock()
		s.migrated = true
		h.mu.Unlock()
	}
	return nil
}

// inboundWriter is the batch writer of a session's inbound.db: each batch
// opens the file under the session's in-process lock (so it never meets
// InitSession building the file) and closes it once committed, as the
// contract asks of the host (the agent's reader sees a host write afresh
// only after the host closes the file).
func (h *Host) inboundWriter(ref SessionRef, path string) *sqlitedb.Writer {
	w := sqlitedb.NewBatchWriter(func(ctx context.Context) (*sql.Conn, func() error, error) {
		unlock, err := h.lockSession(ctx, ref)
		if err != nil {
			return nil, nil, err
		}
		db, conn, err := openConn(ctx, path, pragmasRW)
		if err != nil {
			unlock()
			return nil, nil, err
		}
		return conn, func() error {
			err := db.Close()
			unlock()
			return sqlitedb.Wrap(err, "close %s", path)
		}, nil
	})
	w.Budget = h.opts.WriteBudget
	return w
}

// errCode returns the sessiondb code carried by err, "" when none (unlike
// sessiondb.ErrorCode, which reports unclassified errors as internal): it
// tells a driver error still to be classified from one already classified.
func errCode(err error) string {
	var e *sessiondb.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// withOutboundRO runs fn on a read-only open of the session's outbound.db.
func (h *Host) withOutboundRO(ctx context.Context, ref SessionRef, fn func(q queryer) error) error {
	return h.readOutbound(ctx, ref, lockWait, fn)
}

func (h *Host) readOutbound(ctx context.Context, ref SessionRef, wait time.Duration, fn func(q queryer) error) error {
	path, err := h.layout.OutboundPath(ref)
	if err != nil {
		return err
	}
	return readRO(ctx, path, pragmasRO, wait, fn, "session %s: read outbound", ref)
}

// outboundMax returns MAX(seq) of messages_out, re-reading the file only
// when its size or mtime changed since the last read. An unreadable file,
// or one the agent is committing to (noWait), gives the last value seen:
// parity alone keeps seqs unique.
func (h *Host) outboundMax(ctx context.Context, ref SessionRef) int64 {
	path, err := h.layout.OutboundPath(ref)
	if err != nil {
		return 0
	}
	s := h.session(ref)
	sig := filesig.Of(path)
	h.mu.Lock()
	last, lastSig := s.lastSeq, s.outSeqSig
	h.mu.Unlock()
	if sig == lastSig && sig.Found() {
		return last
	}
	var m int64
	err = h.readOutbound(ctx, ref, noWait, func(q queryer) error {
		var err error
		m, err = maxSeq(q, "messages_out")
		return err
	})
	if err != nil {
		h.log.Debug("mailbox: outbound unreadable for seq, using last seen", "session", ref.String(), "err", err)
		return last
	}
	h.mu.Lock()
	s.lastSeq, s.outSeqSig = m, sig
	h.mu.Unlock()
	return m
}

// sawOutboundMax records the MAX(seq) of outbound.db a drain read from the
// file whose signature was sig (taken before the read): outboundMax needs
// no read of its own until the agent writes again, and while the agent
// commits it falls back on a value that covers every agent row the host
// has seen.
func (h *Host) sawOutboundMax(s *hostSession, sig filesig.Sig, m int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.lastSeq, s.outSeqSig = max(s.lastSeq, m), sig
}
