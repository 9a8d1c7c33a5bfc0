package mailbox

import (
	"context"
	"errors"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// withInbound runs fn in one write transaction on the session's inbound.db,
// opened for this operation and closed after it, under the session's
// in-process lock. The first open by this Host runs the lazy migrations.
func (h *Host) withInbound(ctx context.Context, ref SessionRef, fn func(tx *sqlitedb.Tx) error) error {
	path, err := h.layout.InboundPath(ref)
	if err != nil {
		return err
	}
	unlock, err := h.lockSession(ctx, ref)
	if err != nil {
		return err
	}
	defer unlock()
	return h.withInboundLocked(ctx, ref, path, fn)
}

func (h *Host) withInboundLocked(ctx context.Context, ref SessionRef, path string, fn func(tx *sqlitedb.Tx) error) error {
	rw, err := openRW(ctx, path, pragmasRW, h.opts.WriteBudget)
	if err != nil {
		return err
	}
	s := h.session(ref)
	h.mu.Lock()
	migrated := s.migrated
	h.mu.Unlock()
	err = rw.do(ctx, func(tx *sqlitedb.Tx) error {
		if !migrated {
			if err := migrateInbound(tx); err != nil {
				return sqlitedb.Wrap(err, "migrate %s", path)
			}
		}
		return fn(tx)
	})
	if cerr := rw.Close(); err == nil && cerr != nil {
		err = sqlitedb.Wrap(cerr, "close %s", path)
	}
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
