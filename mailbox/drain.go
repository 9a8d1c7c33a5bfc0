package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/backoff"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// maxRetryDelay caps the wait between delivery attempts.
const maxRetryDelay = 60 * time.Second

// deliveryDelay is the wait after the n-th failed attempt: min(2^n s, 60 s).
func deliveryDelay(attempts int) time.Duration {
	return backoff.Exponential(attempts+1, time.Second, maxRetryDelay)
}

// drainState is what inbound.db says about the candidates of one drain.
type drainState struct {
	delivered map[string]deliveredRow
	attempts  map[string]attemptRow
	inbound   map[string]bool // edit/reaction targets that are inbound ids
}

type deliveredRow struct{ platformID, status string }

type attemptRow struct {
	attempts int
	next     string
}

// Drain delivers the session's due outbound rows, in seq order, through d:
// rows not yet in delivered, past deliver_after and not waiting for a retry.
// Each result is recorded in inbound.db at once (delivered, failed, or an
// attempt with back-off), in one transaction with the agent's acks synced
// (SyncAcks), so a delivery costs one inbound commit; the outbox folder of a
// delivered row is removed, and the agent is told about a row that failed
// for good. Edits and reactions are retargeted (contract section 11) before
// d sees them. A drain that records nothing still syncs the acks it read
// (those committed with or before the outbound rows it read), and writes
// nothing when there are none. Only one drain per session runs at a time:
// an overlapping call returns at once with Skipped set.
//
// What a drain needs to know of both files is read in one read transaction
// over outbound.db with inbound.db attached read-only: a drain opens
// inbound.db read-write only to record what it did.
//
// d receives kind='system' rows too (the host action registry): it should
// return "", nil for an unknown action so the row is marked delivered.
func (h *Host) Drain(ctx context.Context, ref SessionRef, d Deliverer) (DrainResult, error) {
	return h.DrainWith(ctx, ref, d, DrainOptions{})
}

// DrainOptions configure Host.DrainWith.
type DrainOptions struct {
	// Read, when set, is called inside the drain's read of outbound.db,
	// after its reads, while the read lock is held: every outbound commit
	// that ended before the call is in what the drain delivers, and none
	// ends during it. A caller woken by outbound changes drops there the
	// wakes it has had: the commit a drain met and waited for in its read
	// (the agent's reply, right after the claim that woke the drain) then
	// starts no second drain that finds nothing. A wake still on its way
	// only costs a drain that finds nothing; one that comes after the call
	// is for a commit the drain did not see. It must not block.
	Read func()
}

// DrainWith is Drain with options.
func (h *Host) DrainWith(ctx context.Context, ref SessionRef, d Deliverer, o DrainOptions) (DrainResult, error) {
	var res DrainResult
	dir, err := h.layout.SessionDir(ref)
	if err != nil {
		return res, err
	}
	if d == nil {
		return res, sessiondb.Errorf(sessiondb.EINVALID, "drain %s: no deliverer", ref)
	}
	s := h.session(ref)
	if !s.draining.TryLock() {
		res.Skipped = true
		return res, nil
	}
	defer s.draining.Unlock()

	// One read-only open of outbound.db serves the whole drain: the
	// candidates now, the acks with each record. Idle, it holds no lock.
	outPath, err := h.layout.OutboundPath(ref)
	if err != nil {
		return res, err
	}
	inPath, err := h.layout.InboundPath(ref)
	if err != nil {
		return res, err
	}
	h.mu.Lock()
	migrated := s.migrated
	h.mu.Unlock()
	if !migrated {
		// The read below needs the host's lazy migrations of inbound.db
		// (delivery_attempts, delivered's newer columns), which only a
		// write runs.
		if err := h.withInbound(ctx, ref, func(*sqlitedb.Tx) error { return nil }); err != nil {
			return res, err
		}
	}
	outSig := filesig.Of(outPath)
	outDB, err := openRO(outPath, pragmasRO, lockWait)
	if err != nil {
		return res, err
	}
	defer outDB.Close()
	out := ctxQueryer{ctx, outDB}

	now := h.now()
	requeued := takeRequeueMark(dir)
	h.mu.Lock()
	if requeued {
		s.drainMark = 0
	}
	mark := s.drainMark
	h.mu.Unlock()
	var all, cands []OutboundRow
	var outIDs map[string]bool
	var outMax int64
	var st drainState
	ackSync := false
	read := func() error {
		return snapshot(ctx, outDB, func(q queryer) error {
			var err error
			if all, cands, outIDs, err = readDrainRows(q, now, mark); err != nil {
				return err
			}
			if outMax, err = maxSeq(q, "messages_out"); err != nil {
				return err
			}
			st = drainState{delivered: map[string]deliveredRow{}, attempts: map[string]attemptRow{}, inbound: map[string]bool{}}
			if err := st.read(q, all, cands, outIDs); err != nil {
				return err
			}
			if ackSync, err = acksToSync(q); err != nil {
				return err
			}
			if o.Read != nil {
				o.Read()
			}
			return nil
		}, attachment{inboundAlias, inPath})
	}
	err = read()
	if sqlitedb.IsReadOnlyRollback(err) {
		// A host writer died mid-commit and left inbound.db's journal hot:
		// a read-write open rolls it back, then the read can run. When
		// that open fails, its error is the cause to report.
		if werr := h.withInbound(ctx, ref, func(*sqlitedb.Tx) error { return nil }); werr == nil {
			err = read()
		} else {
			err = errors.Join(err, fmt.Errorf("roll back inbound.db's journal: %w", werr))
		}
	}
	if err != nil {
		return res, sqlitedb.Wrap(err, "session %s: read outbound.db and inbound.db", ref)
	}
	h.sawOutboundMax(s, outSig, outMax)
	if len(all) == 0 {
		if ackSync {
			_, err = h.syncAcks(ctx, ref, out)
		}
		return res, err
	}
	defer func() {
		// Advance the watermark over the leading run of resolved rows.
		m := mark
		for _, r := range all {
			if r.Seq == 0 {
				break
			}
			if _, done := st.delivered[r.ID]; !done {
				break
			}
			m = r.Seq
		}
		h.mu.Lock()
		if m > s.drainMark {
			s.drainMark = m
		}
		h.mu.Unlock()
	}()

	var errs []error
	recorded := false
	for _, row := range cands {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if _, done := st.delivered[row.ID]; done {
			continue
		}
		if a, ok := st.attempts[row.ID]; ok && a.next != "" {
			if t, err := ParseTime(a.next); err == nil && t.After(now) {
				continue
			}
		}
		wrote, err := h.deliverOne(ctx, ref, dir, d, row, out, outIDs, &st, &res)
		recorded = recorded || wrote
		if err != nil {
			errs = append(errs, err)
			// A failure to record is a failure of the session's inbound
			// file: stop here rather than deliver rows we cannot record.
			break
		}
	}
	if !recorded && len(errs) == 0 && ackSync {
		if _, err := h.syncAcks(ctx, ref, out); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return res, sessiondb.Wrap(sqlitedb.Code(errs[0]), errors.Join(errs...), "drain %s", ref)
	}
	return res, nil
}

// readDrainRows reads the outbound rows above the watermark mark (all, in
// seq order), those due at now (cands), and which edit and reaction
// targets of cands are outbound ids.
func readDrainRows(out queryer, now time.Time, mark int64) (all, cands []OutboundRow, outIDs map[string]bool, err error) {
	// Rows at or below the watermark are all resolved (delivered or
	// failed): reading only the rows above it keeps a drain's cost
	// independent of the session's history. NULL-seq rows (legacy) are
	// always read.
	outIDs = map[string]bool{}
	err = each(out, "SELECT "+outboundCols+`, (deliver_after IS NULL OR datetime(deliver_after) <= datetime(?))
 FROM messages_out WHERE seq IS NULL OR seq > ? ORDER BY seq IS NULL, seq, timestamp`, []any{FormatTime(now), mark}, func(row sqlitedb.Row) error {
		var isDue sql.NullString
		r, err := scanOutbound(row, &isDue)
		if err != nil {
			return err
		}
		all = append(all, r)
		if isDue.String == "1" {
			cands = append(cands, r)
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	// Edit targets may be any out row, older or not yet due.
	var targets []any
	for _, c := range cands {
		if t := editTarget(c); t != "" {
			targets = append(targets, t)
		}
	}
	err = inChunks(targets, func(part []any, ph string) error {
		ids, err := idSet(out, "SELECT id FROM messages_out WHERE id IN ("+ph+")", part...)
		for id := range ids {
			outIDs[id] = true
		}
		return err
	})
	return all, cands, outIDs, err
}

// read fills st from inbound.db, attached to q as inboundAlias, for the
// rows of one drain.
func (st *drainState) read(q queryer, all, cands []OutboundRow, outIDs map[string]bool) error {
	var ids []any
	for _, r := range all {
		ids = append(ids, r.ID)
	}
	for id := range outIDs {
		ids = append(ids, id)
	}
	err := inChunks(ids, func(part []any, ph string) error {
		return each(q, "SELECT message_out_id, platform_message_id, status FROM "+inboundAlias+".delivered WHERE message_out_id IN ("+ph+")", part, func(row sqlitedb.Row) error {
			var id string
			var pid, status sql.NullString
			if err := row.Scan(&id, &pid, &status); err != nil {
				return err
			}
			st.delivered[id] = deliveredRow{pid.String, status.String}
			return nil
		})
	})
	if err != nil {
		return err
	}
	err = inChunks(ids[:len(all)], func(part []any, ph string) error {
		return each(q, "SELECT message_out_id, attempts, next_attempt_at FROM "+inboundAlias+".delivery_attempts WHERE message_out_id IN ("+ph+")", part, func(row sqlitedb.Row) error {
			var id string
			var a attemptRow
			var next sql.NullString
			if err := row.Scan(&id, &a.attempts, &next); err != nil {
				return err
			}
			a.next = next.String
			st.attempts[id] = a
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, c := range cands {
		if t := editTarget(c); t != "" && !outIDs[t] {
			var one int
			if err := scanOne(q, &one, "SELECT 1 FROM "+inboundAlias+".messages_in WHERE id = ?", t); err != nil {
				return err
			}
			if one == 1 {
				st.inbound[t] = true
			}
		}
	}
	return nil
}

func editTarget(r OutboundRow) string {
	if r.Kind != KindChat || !strings.Contains(string(r.Content), `"operation"`) {
		return ""
	}
	c, err := DecodeContent(r.Content)
	if err != nil || (c.Operation != "edit" && c.Operation != "reaction") {
		return ""
	}
	return c.MessageID
}

// deliverOne prepares, delivers and records one row, syncing the agent's
// acks (read through out) in the same inbound transaction. It reports
// whether it recorded anything; its error is only a failure to record:
// delivery failures are recorded, not returned.
func (h *Host) deliverOne(ctx context.Context, ref SessionRef, dir string, d Deliverer, row OutboundRow,
	out queryer, outIDs map[string]bool, st *drainState, res *DrainResult) (bool, error) {
	isEdit := false
	prep := func() error {
		c, err := DecodeContent(row.Content)
		if err != nil {
			return Permanent(fmt.Errorf("malformed content: %w", err))
		}
		if row.Kind != KindSystem && row.Routing.ChannelType == "" {
			return Permanent(errors.New("no channel_type"))
		}
		if row.Kind != KindSystem && row.Routing.PlatformID == "" {
			return Permanent(errors.New("no platform_id"))
		}
		if t := editTarget(row); t != "" {
			isEdit = true
			switch {
			case outIDs[t]:
				dr, ok := st.delivered[t]
				switch {
				case !ok:
					return ErrNotReady
				case dr.status == DeliveredFailed:
					return Permanent(fmt.Errorf("%s target %s failed to deliver", c.Operation, t))
				case dr.platformID != "":
					row.Content = setKey(row.Content, "messageId", dr.platformID)
				}
			case st.inbound[t] && strings.HasSuffix(t, ":"+ref.AgentGroupID):
				row.Content = setKey(row.Content, "messageId", strings.TrimSuffix(t, ":"+ref.AgentGroupID))
			}
		}
		for _, name := range c.Files {
			f, err := checkOutboxFile(dir, row.ID, name)
			if err != nil {
				return Permanent(err)
			}
			row.Files = append(row.Files, f)
		}
		return nil
	}
	err := prep()
	pid := ""
	if err == nil {
		dctx, cancel := context.WithTimeout(ctx, h.opts.OpTimeout)
		pid, err = d.Deliver(dctx, ref, row)
		cancel()
	}
	now := h.now()
	if errors.Is(err, ErrNotReady) {
		res.Deferred++
		return false, nil
	}
	if err == nil {
		if isEdit || row.Kind == KindSystem {
			pid = ""
		}
		werr := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
			if _, err := tx.Exec("INSERT OR IGNORE INTO delivered (message_out_id, platform_message_id, status, delivered_at) VALUES (?, ?, 'delivered', ?)",
				row.ID, nullStr(pid), FormatTime(now)); err != nil {
				return err
			}
			if _, err := tx.Exec("DELETE FROM delivery_attempts WHERE message_out_id = ?", row.ID); err != nil {
				return err
			}
			_, err := syncAcksTx(tx, out)
			return err
		})
		if werr != nil {
			return false, werr
		}
		st.delivered[row.ID] = deliveredRow{pid, DeliveredOK}
		res.Delivered++
		h.removeOutbox(dir, row.ID)
		return true, nil
	}
	reason := errtext.Clip(strings.ReplaceAll(err.Error(), "\n", " "), 300)
	attempts := st.attempts[row.ID].attempts + 1
	final := IsPermanent(err) || attempts >= h.opts.MaxDeliveryAttempts
	h.log.Debug("mailbox: delivery failed", "session", ref.String(), "id", row.ID, "attempt", attempts, "final", final, "err", reason)
	werr := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var next any
		if !final {
			next = FormatTime(now.Add(deliveryDelay(attempts)))
		}
		if _, err := tx.Exec(`INSERT INTO delivery_attempts (message_out_id, attempts, last_error, last_attempt_at, next_attempt_at)
 VALUES (?, ?, ?, ?, ?) ON CONFLICT(message_out_id) DO UPDATE SET attempts = excluded.attempts,
 last_error = excluded.last_error, last_attempt_at = excluded.last_attempt_at, next_attempt_at = excluded.next_attempt_at`,
			row.ID, attempts, reason, FormatTime(now), next); err != nil {
			return err
		}
		if _, err := syncAcksTx(tx, out); err != nil {
			return err
		}
		if !final {
			return nil
		}
		if _, err := tx.Exec("INSERT OR IGNORE INTO delivered (message_out_id, platform_message_id, status, delivered_at) VALUES (?, NULL, 'failed', ?)",
			row.ID, FormatTime(now)); err != nil {
			return err
		}
		text := fmt.Sprintf("Delivery failed (seq %d): %s", row.Seq, reason)
		m := Notification(ref.AgentGroupID, text, now)
		m.ContextOnly = !h.opts.NotifyFailureTrigger
		_, _, err := h.insertInbound(ctx, tx, ref, m, m.Content)
		return err
	})
	if werr != nil {
		return false, werr
	}
	st.attempts[row.ID] = attemptRow{attempts: attempts}
	if final {
		st.delivered[row.ID] = deliveredRow{"", DeliveredFailed}
		res.Failed++
		// A row given up on is an operator's business: say which, where
		// it was going and why, at the level a host logs by default.
		h.log.Warn("mailbox: delivery failed for good", "session", ref.String(), "id", row.ID, "seq", row.Seq, "kind", row.Kind,
			"channel_type", row.Routing.ChannelType, "platform_id", row.Routing.PlatformID, "attempts", attempts,
			"permanent", IsPermanent(err), "err", reason)
	} else {
		res.Retrying++
	}
	return true, nil
}

// setKey returns content with key set to the string v (content already
// decoded once, so it parses).
func setKey(content []byte, key, v string) []byte {
	o, err := parseObject("content", content)
	if err != nil {
		return content
	}
	o.set(key, marshalCompact(v))
	return o.marshal()
}

// removeOutbox deletes outbox/<id>/ after a delivery, refusing to follow a
// symlink planted in its place.
func (h *Host) removeOutbox(dir, id string) {
	if ValidateName("id", id) != nil {
		return
	}
	p := filepath.Join(dir, OutboxDirName, id)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil || !fi.IsDir() {
		h.log.Warn("mailbox: outbox entry is not a folder; left alone", "path", p)
		return
	}
	if err := os.RemoveAll(p); err != nil {
		h.log.Warn("mailbox: could not remove outbox folder", "path", p, "err", err)
	}
}
