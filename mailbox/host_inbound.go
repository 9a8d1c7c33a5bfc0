package mailbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/backoff"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// InitSession creates the session folder, inbox/ and outbox/, and both
// files with the contract's DDL in journal_mode=DELETE. It is idempotent: an
// existing session keeps its rows; an existing inbound.db gets the host's
// lazy migrations, an existing outbound.db is left to its agent.
func (h *Host) InitSession(ctx context.Context, ref SessionRef) error {
	dir, err := h.layout.SessionDir(ref)
	if err != nil {
		return err
	}
	unlock, err := h.lockSession(ctx, ref)
	if err != nil {
		return err
	}
	defer unlock()
	for _, d := range []string{filepath.Dir(dir), dir, filepath.Join(dir, OutboxDirName), filepath.Join(dir, InboxDirName)} {
		if err := h.mkdir(d); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, ddl string }{{InboundFile, InboundSchema}, {OutboundFile, OutboundSchema}} {
		path := filepath.Join(dir, f.name)
		if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
			return sessiondb.Errorf(sessiondb.EINVALID, "%s is not a regular file", path)
		}
		created, warn, err := sqlitedb.CreateFile(path, h.modes.dir, h.modes.file)
		if err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", path)
		} else if warn != nil {
			h.log.Warn("mailbox: could not tighten file mode", "path", path, "err", warn)
		}
		h.chgrp(path)
		if f.name == OutboundFile && !created {
			// An existing outbound.db belongs to the agent: the host never
			// opens it read-write while a container may be alive, and the
			// agent runs its own lazy migrations. Only an empty file (a
			// creation interrupted before the DDL) is finished here.
			if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
				continue
			}
		}
		rw, err := openRW(ctx, path, pragmasRW, h.opts.WriteBudget)
		if err != nil {
			return err
		}
		err = rw.do(ctx, func(tx *sqlitedb.Tx) error {
			if f.name == InboundFile {
				if err := migrateInbound(tx); err != nil {
					return err
				}
			} else if err := migrateOutbound(tx); err != nil {
				return err
			}
			return tx.ExecScript(f.ddl)
		})
		if cerr := rw.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return classify(err, "initialize %s", path)
		}
	}
	s := h.session(ref)
	h.mu.Lock()
	s.migrated = true
	h.mu.Unlock()
	return nil
}

func (h *Host) mkdir(d string) error {
	fi, err := os.Lstat(d)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return sessiondb.Errorf(sessiondb.EINVALID, "%s exists and is not a folder", d)
	case !errors.Is(err, fs.ErrNotExist):
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "stat %s", d)
	}
	if err := os.MkdirAll(d, h.modes.dir); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", d)
	}
	// MkdirAll's mode passes through the umask; say exactly what we mean.
	if err := os.Chmod(d, h.modes.dir); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "chmod %s", d)
	}
	h.chgrp(d)
	return nil
}

func (h *Host) chgrp(path string) {
	if h.modes.gid > 0 {
		if err := os.Lchown(path, -1, h.modes.gid); err != nil {
			h.log.Warn("mailbox: could not set the shared group", "path", path, "err", err)
		}
	}
}

// migrateInbound brings an older inbound.db up to the current columns
// (contract section 13). It writes only when table_info shows a gap.
func migrateInbound(tx *sqlitedb.Tx) error {
	cols, err := columns(tx, "messages_in")
	if err != nil {
		return err
	}
	if len(cols) > 0 {
		if !cols["series_id"] {
			if err := tx.ExecScript(`ALTER TABLE messages_in ADD COLUMN series_id TEXT;
UPDATE messages_in SET series_id = id WHERE series_id IS NULL;
CREATE INDEX IF NOT EXISTS idx_messages_in_series ON messages_in(series_id);`); err != nil {
				return err
			}
		}
		for _, c := range []struct{ name, def string }{
			{"trigger", "trigger INTEGER NOT NULL DEFAULT 1"},
			{"source_session_id", "source_session_id TEXT"},
			{"on_wake", "on_wake INTEGER NOT NULL DEFAULT 0"},
		} {
			if !cols[c.name] {
				if err := tx.ExecScript("ALTER TABLE messages_in ADD COLUMN " + c.def); err != nil {
					return err
				}
			}
		}
	}
	dcols, err := columns(tx, "delivered")
	if err != nil {
		return err
	}
	if len(dcols) > 0 {
		if !dcols["platform_message_id"] {
			if err := tx.ExecScript("ALTER TABLE delivered ADD COLUMN platform_message_id TEXT"); err != nil {
				return err
			}
		}
		if !dcols["status"] {
			if err := tx.ExecScript("ALTER TABLE delivered ADD COLUMN status TEXT NOT NULL DEFAULT 'delivered'"); err != nil {
				return err
			}
		}
	}
	acols, err := columns(tx, "delivery_attempts")
	if err != nil {
		return err
	}
	if len(acols) == 0 && len(cols) > 0 {
		return tx.ExecScript(deliveryAttemptsDDL)
	}
	return nil
}

// migrateOutbound is the agent's lazy migration of outbound.db.
func migrateOutbound(tx *sqlitedb.Tx) error {
	cols, err := columns(tx, "session_state")
	if err != nil {
		return err
	}
	if len(cols) == 0 {
		if err := tx.ExecScript(sessionStateDDL); err != nil {
			return err
		}
	} else if !cols["updated_at"] {
		if err := tx.ExecScript("ALTER TABLE session_state ADD COLUMN updated_at TEXT NOT NULL DEFAULT ''"); err != nil {
			return err
		}
	}
	ccols, err := columns(tx, "container_state")
	if err != nil {
		return err
	}
	if len(ccols) == 0 {
		return tx.ExecScript(containerStateDDL)
	}
	return nil
}

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
				return sessiondb.Wrap(sessiondb.EINTERNAL, err, "migrate %s", path)
			}
		}
		return fn(tx)
	})
	if cerr := rw.Close(); err == nil && cerr != nil {
		err = classify(cerr, "close %s", path)
	}
	if err != nil {
		if errCode(err) == "" {
			return classify(err, "session %s: inbound", ref)
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
	path, err := h.layout.OutboundPath(ref)
	if err != nil {
		return err
	}
	return readRO(ctx, path, pragmasRO, fn, "session %s: read outbound", ref)
}

// outboundMax returns MAX(seq) of messages_out, re-reading the file only
// when its size or mtime changed since the last read. An unreadable file
// gives the last value seen: parity alone keeps seqs unique.
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
	err = h.withOutboundRO(ctx, ref, func(q queryer) error {
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

// Enqueue inserts m into messages_in with the next even seq (INSERT OR
// IGNORE by id): a duplicate id returns the existing row's seq and
// inserted=false. Attachments with base64 data are written to inbox/<id>/
// first and replaced by localPath.
func (h *Host) Enqueue(ctx context.Context, ref SessionRef, m InboundMessage) (seq int64, inserted bool, err error) {
	if err := ref.Validate(); err != nil {
		return 0, false, err
	}
	content, err := h.checkInbound(&m)
	if err != nil {
		return 0, false, err
	}
	err = h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		seq, inserted, err = h.insertInbound(ctx, tx, ref, m, content)
		return err
	})
	if err == nil && inserted && h.opts.OnEnqueue != nil {
		h.opts.OnEnqueue(ctx, ref, m.ID, seq)
	}
	return seq, inserted, err
}

// checkInbound validates m and returns its compact content.
func (h *Host) checkInbound(m *InboundMessage) ([]byte, error) {
	if err := ValidateName("id", m.ID); err != nil {
		return nil, err
	}
	if err := checkWord("kind", m.Kind); err != nil {
		return nil, err
	}
	content, err := normalizeContent("content", m.Content)
	if err != nil {
		return nil, err
	}
	if m.Recurrence != "" {
		if _, err := ParseRecurrence(m.Recurrence); err != nil {
			return nil, err
		}
	}
	if m.SeriesID != "" {
		if err := checkText("series_id", m.SeriesID); err != nil {
			return nil, err
		}
	}
	if err := checkRouting(m.Routing); err != nil {
		return nil, err
	}
	return content, nil
}

// checkWord accepts a non-empty short token without spaces or control
// characters (kinds, statuses).
func checkWord(field, s string) error {
	if s == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s is empty", field)
	}
	if len(s) > 64 || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s %q is not a plain word", field, errtext.Clip(s, 64))
	}
	return nil
}

// checkText rejects NUL bytes and invalid UTF-8 in stored text ids.
func checkText(field, s string) error {
	if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s %q contains a NUL byte or invalid UTF-8", field, errtext.Clip(s, 64))
	}
	return nil
}

func checkRouting(r Routing) error {
	for _, f := range []struct{ name, v string }{{"channel_type", r.ChannelType}, {"platform_id", r.PlatformID}, {"thread_id", r.ThreadID}} {
		if err := checkText(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func (h *Host) insertInbound(ctx context.Context, tx *sqlitedb.Tx, ref SessionRef, m InboundMessage, content []byte) (int64, bool, error) {
	var existing sql.NullInt64
	switch err := tx.QueryRow("SELECT seq FROM messages_in WHERE id = ?", m.ID).Scan(&existing); {
	case err == nil:
		return existing.Int64, false, nil
	case !errors.Is(err, sql.ErrNoRows):
		return 0, false, err
	}
	now := h.now()
	content, written, err := h.extractAttachments(ref, m.ID, content, now)
	if err != nil {
		return 0, false, err
	}
	undo := func() {
		for _, p := range written {
			os.Remove(p)
		}
	}
	ts := m.Timestamp
	if ts.IsZero() {
		ts = now
	}
	series := m.SeriesID
	if series == "" {
		series = m.ID
	}
	outMax := h.outboundMax(ctx, ref)
	for attempt := 0; ; attempt++ {
		inMax, err := maxSeq(tx, "messages_in")
		if err != nil {
			undo()
			return 0, false, err
		}
		seq := nextSeq(max(inMax, outMax), 0)
		_, err = tx.Exec(`INSERT OR IGNORE INTO messages_in (id, seq, kind, timestamp, status, process_after, recurrence,
 series_id, tries, trigger, platform_id, channel_type, thread_id, content, source_session_id, on_wake)
 VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
			m.ID, seq, m.Kind, FormatTime(ts), nullTime(m.ProcessAfter), nullStr(m.Recurrence), series,
			boolInt(!m.ContextOnly), nullStr(m.Routing.PlatformID), nullStr(m.Routing.ChannelType), nullStr(m.Routing.ThreadID),
			string(content), nullStr(m.SourceSessionID), boolInt(m.OnWake))
		if err == nil {
			return seq, true, nil
		}
		if !sqlitedb.IsUnique(err) || attempt >= 5 {
			undo()
			return 0, false, err
		}
		// A writer that skipped the lock took this seq: read again.
		outMax = max(outMax, seq)
	}
}

// EnqueueTask schedules a kind='task' row and returns its id and seq. A
// non-empty Recurrence must parse (ParseRecurrence). ProcessAfter defaults
// to now.
func (h *Host) EnqueueTask(ctx context.Context, ref SessionRef, t Task) (id string, seq int64, err error) {
	id = t.ID
	if id == "" {
		id = NewID("task", h.now())
	}
	pa := t.ProcessAfter
	if pa.IsZero() {
		pa = h.now()
	}
	content := &object{vals: map[string]json.RawMessage{}}
	content.set("prompt", marshalCompact(t.Prompt))
	if t.Script != nil {
		content.set("script", marshalCompact(*t.Script))
	} else {
		content.set("script", json.RawMessage("null"))
	}
	seq, _, err = h.Enqueue(ctx, ref, InboundMessage{
		ID: id, Kind: KindTask, Content: content.marshal(), Routing: t.Routing,
		ProcessAfter: pa, Recurrence: t.Recurrence,
	})
	return id, seq, err
}

const liveTask = `(id = ? OR series_id = ?) AND kind = 'task'`

func (h *Host) taskUpdate(ctx context.Context, ref SessionRef, id, set, where string) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	if id == "" {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "task id is empty")
	}
	var n int64
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		res, err := tx.Exec("UPDATE messages_in SET "+set+" WHERE "+liveTask+" AND "+where, id, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// CancelTask completes the live (pending or paused) rows of the task series
// named by id and clears their recurrence. It returns the rows touched.
func (h *Host) CancelTask(ctx context.Context, ref SessionRef, id string) (int, error) {
	return h.taskUpdate(ctx, ref, id, "status = 'completed', recurrence = NULL", "status IN ('pending', 'paused')")
}

// PauseTask pauses the pending rows of the series; returns rows touched.
func (h *Host) PauseTask(ctx context.Context, ref SessionRef, id string) (int, error) {
	return h.taskUpdate(ctx, ref, id, "status = 'paused'", "status = 'pending'")
}

// ResumeTask makes the paused rows of the series pending; returns rows
// touched.
func (h *Host) ResumeTask(ctx context.Context, ref SessionRef, id string) (int, error) {
	return h.taskUpdate(ctx, ref, id, "status = 'pending'", "status = 'paused'")
}

// UpdateTask applies u to the live rows of the series: prompt and script are
// merged into the content JSON (other keys kept); process_after and
// recurrence are set or cleared. It returns the rows touched.
func (h *Host) UpdateTask(ctx context.Context, ref SessionRef, id string, u TaskUpdate) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	if id == "" {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "task id is empty")
	}
	if u.Recurrence != nil && *u.Recurrence != "" {
		if _, err := ParseRecurrence(*u.Recurrence); err != nil {
			return 0, err
		}
	}
	n := 0
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		n = 0
		rows, err := tx.Query("SELECT id, content FROM messages_in WHERE "+liveTask+" AND status IN ('pending', 'paused')", id, id)
		if err != nil {
			return err
		}
		type live struct{ id, content string }
		var ls []live
		for rows.Next() {
			var l live
			if err := rows.Scan(&l.id, &l.content); err != nil {
				rows.Close()
				return err
			}
			ls = append(ls, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, l := range ls {
			o, err := parseObject("stored content of "+l.id, []byte(l.content))
			if err != nil {
				o = &object{vals: map[string]json.RawMessage{}}
			}
			if u.Prompt != nil {
				o.set("prompt", marshalCompact(*u.Prompt))
			}
			switch {
			case u.ClearScript:
				o.set("script", json.RawMessage("null"))
			case u.Script != nil:
				o.set("script", marshalCompact(*u.Script))
			}
			set := []string{"content = ?"}
			args := []any{string(o.marshal())}
			switch {
			case u.ClearProcessAfter:
				set = append(set, "process_after = NULL")
			case u.ProcessAfter != nil:
				set = append(set, "process_after = ?")
				args = append(args, FormatTime(*u.ProcessAfter))
			}
			switch {
			case u.ClearRecurrence || (u.Recurrence != nil && *u.Recurrence == ""):
				set = append(set, "recurrence = NULL")
			case u.Recurrence != nil:
				set = append(set, "recurrence = ?")
				args = append(args, *u.Recurrence)
			}
			args = append(args, l.id)
			if _, err := tx.Exec("UPDATE messages_in SET "+strings.Join(set, ", ")+" WHERE id = ?", args...); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// CountDue counts due rows with trigger=1: pending, and process_after unset
// or not after now.
func (h *Host) CountDue(ctx context.Context, ref SessionRef) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	var n int
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		n, err = countDueTx(tx, h.now())
		return err
	})
	return n, err
}

func countDueTx(tx *sqlitedb.Tx, now time.Time) (int, error) {
	var n int
	err := tx.QueryRow(`SELECT count(*) FROM messages_in WHERE status = 'pending' AND trigger = 1
 AND (process_after IS NULL OR datetime(process_after) <= datetime(?))`, FormatTime(now)).Scan(&n)
	return n, err
}

// readAcks returns the agent's acks with the given statuses.
func (h *Host) readAcks(ctx context.Context, ref SessionRef, statuses ...string) ([]Claim, error) {
	var out []Claim
	err := h.withOutboundRO(ctx, ref, func(q queryer) error {
		var err error
		out, err = readClaims(q, statuses...)
		return err
	})
	return out, err
}

// readClaims returns the processing_ack rows with the given statuses.
func readClaims(q queryer, statuses ...string) ([]Claim, error) {
	ph := strings.TrimSuffix(strings.Repeat("?,", len(statuses)), ",")
	args := make([]any, len(statuses))
	for i, s := range statuses {
		args[i] = s
	}
	rows, err := q.Query("SELECT message_id, status, status_changed FROM processing_ack WHERE status IN ("+ph+")", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Claim
	for rows.Next() {
		var c Claim
		if err := rows.Scan(&c.MessageID, &c.Status, &c.StatusChanged); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// SyncAcks mirrors the agent's completed and failed acks into messages_in
// (pending rows only), in one inbound transaction. A failed ack makes the
// row failed, not completed: kept distinct for tools and recurrences. Only
// the acks of pending rows are read, so the cost does not grow with the
// session's history.
func (h *Host) SyncAcks(ctx context.Context, ref SessionRef) (AckSync, error) {
	if err := ref.Validate(); err != nil {
		return AckSync{}, err
	}
	var res AckSync
	err := h.withOutboundRO(ctx, ref, func(out queryer) error {
		return h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
			var err error
			res, err = syncAcksTx(tx, out)
			return err
		})
	})
	return res, err
}

// syncAcksTx applies the acks found through out to the pending rows of the
// open inbound transaction.
func syncAcksTx(tx *sqlitedb.Tx, out queryer) (AckSync, error) {
	var res AckSync
	rows, err := tx.Query("SELECT id FROM messages_in WHERE status = 'pending'")
	if err != nil {
		return res, err
	}
	var pending []any
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return res, err
		}
		pending = append(pending, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return res, err
	}
	err = inChunks(pending, func(part []any, ph string) error {
		arows, err := out.Query("SELECT message_id, status FROM processing_ack WHERE status IN ('completed', 'failed') AND message_id IN ("+ph+")", part...)
		if err != nil {
			return err
		}
		var acks []Claim
		for arows.Next() {
			var c Claim
			if err := arows.Scan(&c.MessageID, &c.Status); err != nil {
				arows.Close()
				return err
			}
			acks = append(acks, c)
		}
		arows.Close()
		if err := arows.Err(); err != nil {
			return err
		}
		for _, a := range acks {
			status := StatusCompleted
			if a.Status == AckFailed {
				status = StatusFailed
			}
			r, err := tx.Exec("UPDATE messages_in SET status = ? WHERE id = ? AND status = 'pending'", status, a.MessageID)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n > 0 {
				if status == StatusFailed {
					res.Failed++
				} else {
					res.Completed++
				}
			}
		}
		return nil
	})
	return res, err
}

func idSet(q queryer, query string, args ...any) (map[string]bool, error) {
	rows, err := q.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		set[id] = true
	}
	return set, rows.Err()
}

// retryDelay is the back-off before retry number tries+1: 5 s · 2^tries,
// at most 5 s · 2^20.
func retryDelay(tries int) time.Duration {
	return backoff.Exponential(tries+1, 5*time.Second, 5*time.Second<<20)
}

// ResetProcessing retries or fails the rows a dead container had claimed,
// then deletes its processing acks (opening outbound.db read-write, which is
// safe only because no container runs: call it only then).
func (h *Host) ResetProcessing(ctx context.Context, ref SessionRef) (ResetResult, error) {
	if err := ref.Validate(); err != nil {
		return ResetResult{}, err
	}
	claims, err := h.readAcks(ctx, ref, AckProcessing)
	if err != nil || len(claims) == 0 {
		return ResetResult{}, err
	}
	var res ResetResult
	now := h.now()
	err = h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		res = ResetResult{}
		for _, c := range claims {
			var tries sql.NullInt64
			var pa sql.NullString
			err := tx.QueryRow("SELECT tries, process_after FROM messages_in WHERE id = ? AND status = 'pending'", c.MessageID).Scan(&tries, &pa)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if pa.Valid {
				if t, err := ParseTime(pa.String); err == nil && t.After(now) {
					res.Skipped++
					continue
				}
			}
			if tries.Int64 >= MaxTries {
				if _, err := tx.Exec("UPDATE messages_in SET status = 'failed' WHERE id = ?", c.MessageID); err != nil {
					return err
				}
				res.Failed++
				continue
			}
			next := now.Add(retryDelay(int(tries.Int64)))
			if _, err := tx.Exec("UPDATE messages_in SET tries = COALESCE(tries, 0) + 1, process_after = ? WHERE id = ?", FormatTime(next), c.MessageID); err != nil {
				return err
			}
			res.Retried++
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	n, err := h.clearProcessingAcks(ctx, ref)
	res.AcksCleared = n
	return res, err
}

// clearProcessingAcks deletes processing acks through a read-write open of
// outbound.db; the caller guarantees the container is dead. The read inside
// the transaction also rolls back a hot journal the agent left.
func (h *Host) clearProcessingAcks(ctx context.Context, ref SessionRef) (int, error) {
	path, err := h.layout.OutboundPath(ref)
	if err != nil {
		return 0, err
	}
	rw, err := openRW(ctx, path, pragmasRW, h.opts.WriteBudget)
	if err != nil {
		return 0, err
	}
	var n int64
	err = rw.do(ctx, func(tx *sqlitedb.Tx) error {
		r, err := tx.Exec("DELETE FROM processing_ack WHERE status = 'processing'")
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if cerr := rw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, classify(err, "session %s: clear processing acks", ref)
	}
	return int(n), nil
}

// ExpireSystemRows fails pending kind='system' rows older than
// SystemRowTTL (orphaned question responses would otherwise wake containers
// forever); returns the rows touched.
func (h *Host) ExpireSystemRows(ctx context.Context, ref SessionRef) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	var n int
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		n, err = h.expireTx(tx)
		return err
	})
	return n, err
}

func (h *Host) expireTx(tx *sqlitedb.Tx) (int, error) {
	cutoff := FormatTime(h.now().Add(-h.opts.SystemRowTTL))
	r, err := tx.Exec(`UPDATE messages_in SET status = 'failed'
 WHERE kind = 'system' AND status = 'pending' AND datetime(timestamp) <= datetime(?)`, cutoff)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

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

// ContainerState reads outbound.db's container_state (read-only); a missing
// table or row reads as no tool in flight.
func (h *Host) ContainerState(ctx context.Context, ref SessionRef) (ContainerState, error) {
	var st ContainerState
	err := h.withOutboundRO(ctx, ref, func(q queryer) error {
		var err error
		st, err = readContainerState(q)
		return err
	})
	return st, err
}

func readContainerState(q queryer) (ContainerState, error) {
	var st ContainerState
	cols, err := columns(q, "container_state")
	if err != nil || len(cols) == 0 {
		return st, err
	}
	rows, err := q.Query("SELECT current_tool, tool_declared_timeout_ms, tool_started_at, updated_at FROM container_state WHERE id = 1")
	if err != nil {
		return st, err
	}
	defer rows.Close()
	if rows.Next() {
		var tool, started, updated sql.NullString
		var ms sql.NullInt64
		if err := rows.Scan(&tool, &ms, &started, &updated); err != nil {
			return st, err
		}
		st = ContainerState{CurrentTool: tool.String, ToolDeclaredTimeoutMS: ms.Int64, ToolStartedAt: started.String, UpdatedAt: updated.String}
	}
	return st, rows.Err()
}

// Claims reads the processing acks (read-only).
func (h *Host) Claims(ctx context.Context, ref SessionRef) ([]Claim, error) {
	return h.readAcks(ctx, ref, AckProcessing)
}

// Heartbeat returns the .heartbeat mtime, zero when absent.
func (h *Host) Heartbeat(ref SessionRef) (time.Time, error) {
	path, err := h.layout.HeartbeatPath(ref)
	if err != nil {
		return time.Time{}, err
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "stat %s", path)
	}
	return fi.ModTime(), nil
}

// CheckStuck reads the heartbeat, container state and claims and applies
// DecideStuck at the host clock's now.
func (h *Host) CheckStuck(ctx context.Context, ref SessionRef) (StuckVerdict, error) {
	hb, err := h.Heartbeat(ref)
	if err != nil {
		return StuckOK, err
	}
	// One read-only open of outbound.db for both reads.
	var st ContainerState
	var claims []Claim
	err = h.withOutboundRO(ctx, ref, func(q queryer) error {
		var err error
		if st, err = readContainerState(q); err != nil {
			return err
		}
		claims, err = readClaims(q, AckProcessing)
		return err
	})
	if err != nil {
		return StuckOK, err
	}
	return DecideStuck(h.now(), hb, st, claims), nil
}

// RecoverHotJournal rolls back a hot outbound journal left by a killed
// agent (a read-only handle cannot, so every host read would fail) and
// deletes orphan processing acks. Call it only once the container is
// confirmed dead. It reports whether a journal was found.
func (h *Host) RecoverHotJournal(ctx context.Context, ref SessionRef) (bool, error) {
	path, err := h.layout.OutboundPath(ref)
	if err != nil {
		return false, err
	}
	fi, err := os.Stat(path + "-journal")
	if err != nil || fi.Size() == 0 {
		return false, nil
	}
	if _, err := h.clearProcessingAcks(ctx, ref); err != nil {
		return true, err
	}
	return true, nil
}

// RecoverInbound opens inbound.db read-write once so SQLite rolls back a
// journal left by a killed host, and runs the lazy migrations. Call it for
// each active session at host start.
func (h *Host) RecoverInbound(ctx context.Context, ref SessionRef) error {
	return h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var n int
		return tx.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n)
	})
}

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
		out = nil
		rows, err := tx.Query("SELECT "+inboundCols+" FROM messages_in ORDER BY seq IS NULL, seq DESC, timestamp DESC LIMIT ?", limit)
		if err != nil {
			return err
		}
		out, err = collectInbound(rows)
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
		rows, err := q.Query("SELECT "+outboundCols+" FROM messages_out ORDER BY seq IS NULL, seq DESC, timestamp DESC LIMIT ?", limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanOutbound(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}
