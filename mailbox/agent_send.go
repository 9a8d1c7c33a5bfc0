package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// inboundMax returns MAX(seq) of messages_in, re-reading only when the file
// changed; unreadable, or being committed to by the host (noWait) → the
// last value seen.
func (a *Agent) inboundMax(ctx context.Context) int64 {
	sig := filesig.Of(a.inboundPath)
	a.mu.Lock()
	last, lastSig := a.lastInSeq, a.inSeqSig
	a.mu.Unlock()
	if sig.Found() && sig == lastSig {
		return last
	}
	var m int64
	err := readRO(ctx, a.inboundPath, pragmasAgentIn, noWait, func(q queryer) error {
		var err error
		m, err = maxSeq(q, "messages_in")
		return err
	}, "agent: read inbound")
	if err != nil {
		a.log.Debug("mailbox agent: inbound unreadable for seq, using last seen", "err", err)
		return last
	}
	a.mu.Lock()
	a.lastInSeq, a.inSeqSig = m, sig
	a.mu.Unlock()
	return m
}

// Send writes m into messages_out with the next odd seq — max over both
// tables, taken inside outbound's BEGIN IMMEDIATE so two writer processes
// serialize — and returns the seq. Files are copied into outbox/<id>/ first
// (a name listed twice or unsafe is invalid) and, when the content has no
// "files" key, listed there. deliver_after is written in the form
// NanoClaw's readers compare it in (DeliverAfterFormat).
//
// The ids in m.Complete are acked completed in the same transaction as the
// row, as MarkCompleted would after it: the reply that ends a batch and the
// batch's completion cost one durable commit instead of two, and the host
// reads both at once (NanoClaw's host reads committed rows of both tables,
// so it sees them together too). A send that fails acks nothing.
func (a *Agent) Send(ctx context.Context, m OutboundMessage) (int64, error) {
	now := a.now()
	if m.ID == "" {
		m.ID = NewID("msg", now)
	}
	if err := ValidateName("id", m.ID); err != nil {
		return 0, err
	}
	if m.Kind == "" {
		m.Kind = KindChat
	}
	if err := checkWord("kind", m.Kind); err != nil {
		return 0, err
	}
	content, err := normalizeContent("content", m.Content)
	if err != nil {
		return 0, err
	}
	if err := checkRouting(m.Routing); err != nil {
		return 0, err
	}
	if err := checkText("in_reply_to", m.InReplyTo); err != nil {
		return 0, err
	}
	if err := checkAckIDs("complete", m.Complete); err != nil {
		return 0, err
	}
	if m.Recurrence != "" {
		if _, err := ParseRecurrence(m.Recurrence); err != nil {
			return 0, err
		}
	}
	if len(m.Files) > 0 {
		if content, err = a.copyFiles(m.ID, m.Files, content); err != nil {
			return 0, err
		}
	}
	var deliverAfter any
	if !m.DeliverAfter.IsZero() {
		deliverAfter = FormatDeliverAfter(m.DeliverAfter)
	}
	inMax := a.inboundMax(ctx)
	var seq int64
	err = a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		var one int
		switch err := tx.QueryRow("SELECT 1 FROM messages_out WHERE id = ?", m.ID).Scan(&one); {
		case err == nil:
			return sessiondb.Errorf(sessiondb.ECONFLICT, "outbound message %q already exists", m.ID)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		for attempt := 0; ; attempt++ {
			outMax, err := maxSeq(tx, "messages_out")
			if err != nil {
				return err
			}
			seq = nextSeq(max(inMax, outMax), 1)
			_, err = tx.Exec(`INSERT INTO messages_out (id, seq, in_reply_to, timestamp, deliver_after, recurrence, kind,
 platform_id, channel_type, thread_id, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				m.ID, seq, nullStr(m.InReplyTo), FormatTime(now), deliverAfter, nullStr(m.Recurrence), m.Kind,
				nullStr(m.Routing.PlatformID), nullStr(m.Routing.ChannelType), nullStr(m.Routing.ThreadID), string(content))
			if err == nil {
				return writeAcks(tx, AckCompleted, m.Complete, FormatTime(now))
			}
			if !sqlitedb.IsUnique(err) || attempt >= 5 {
				return err
			}
			inMax = max(inMax, seq)
		}
	})
	if err != nil {
		if errCode(err) == "" {
			err = sqlitedb.Wrap(err, "agent: send")
		}
		return 0, err
	}
	return seq, nil
}

// copyFiles copies files into outbox/<id>/ and lists them in content.
func (a *Agent) copyFiles(id string, files []string, content []byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	seen := map[string]bool{}
	for i, f := range files {
		name := filepath.Base(f)
		if err := ValidateName(fmt.Sprintf("files[%d]", i), name); err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "files[%d]: name %q given twice", i, name)
		}
		seen[name] = true
		names = append(names, name)
	}
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "files[%d]", i)
		}
		if _, _, err := writeExclusive(a.dir, []string{OutboxDirName, id}, names[i], data, a.modes); err != nil {
			return nil, err
		}
	}
	o, err := parseObject("content", content)
	if err != nil {
		return nil, err
	}
	if _, ok := o.get("files"); !ok {
		o.set("files", marshalCompact(names))
	}
	return o.marshal(), nil
}

// sawInboundMax records the MAX(seq) of inbound.db a poll read from the
// file whose signature was sig (taken before the read): Send needs no read
// of its own until the host writes again, and while the host commits it
// falls back on a value that covers the message it answers.
func (a *Agent) sawInboundMax(sig filesig.Sig, m int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastInSeq, a.inSeqSig = max(a.lastInSeq, m), sig
}

// OutboundRows lists the agent's own messages_out rows newest first (limit
// ≤ 0: all); DeliveryStates says what became of them.
func (a *Agent) OutboundRows(ctx context.Context, limit int) ([]OutboundRow, error) {
	if limit <= 0 {
		limit = -1
	}
	out, err := collect(a.outQ(ctx), "SELECT "+outboundCols+" FROM messages_out ORDER BY seq IS NULL, seq DESC, timestamp DESC LIMIT ?", []any{limit},
		func(row sqlitedb.Row) (OutboundRow, error) { return scanOutbound(row) })
	return out, sqlitedb.Wrap(err, "agent: read outbound")
}
