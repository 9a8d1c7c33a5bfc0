package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

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
