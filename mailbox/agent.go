package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Defaults of AgentOptions and the agent's waits.
const (
	DefaultPollInterval       = time.Second
	DefaultPollLimit          = 10
	DefaultQuestionTimeout    = 300 * time.Second
	DefaultCLIResponseTimeout = 30 * time.Second
)

// AgentOptions configure an Agent. Zero values give the defaults.
type AgentOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval is the fallback poll of the waits (default 1 s); file
	// change notification wakes them earlier.
	PollInterval time.Duration
	// NoNotify turns file-change notification off: waits only poll.
	NoNotify bool
	// Provider names the model provider whose continuation a legacy
	// sdk_session_id row is adopted into at open; empty skips adoption (the
	// legacy row is still deleted).
	Provider string
	// WriteBudget bounds the wait for outbound's write lock; default
	// sqlitedb.DefaultWriteBudget.
	WriteBudget time.Duration
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
	// SharedGroup makes the files the agent creates (outbox attachments,
	// a missing outbound.db) group-readable and -writable (0660, folders
	// 0770), for a host running as another uid in the same group.
	SharedGroup bool
}

// MaxMalformedPolls is how many consecutive polls may find inbound.db
// malformed before Poll reports ErrInboundMalformed: the agent should then
// exit non-zero so the host quarantines the session.
const MaxMalformedPolls = 10

// ErrInboundMalformed is returned (wrapped) by Poll once MaxMalformedPolls
// consecutive polls found inbound.db malformed.
var ErrInboundMalformed = errors.New("mailbox: inbound.db is malformed")

// Agent is the container side of one session folder: it reads inbound.db
// read-only (a fresh connection per messages_in poll) and writes outbound.db
// through one long-lived connection. It is safe for concurrent use by the
// goroutines of one process; a second process may open its own Agent on the
// same folder (seq allocation serializes under the write lock).
type Agent struct {
	dir          string
	opts         AgentOptions
	now          func() time.Time
	log          *slog.Logger
	inboundPath  string
	outboundPath string

	out *sql.DB
	w   *sqlitedb.Writer

	mu         sync.Mutex
	lastInSeq  int64
	inSeqSig   filesig.Sig
	modes      modes
	inSelect   string // messages_in select list, probed once
	hasOnWake  bool
	watcher    *Watcher
	closed     bool
	malformedN int
}

// PollOptions configure Agent.Poll. Limit ≤ 0 means DefaultPollLimit.
type PollOptions struct {
	FirstPoll bool
	Limit     int
}

// OpenAgent opens the session folder dir as its agent: outbound.db read-write
// (created with the contract's DDL when missing; older files get the agent's
// lazy migrations), and adopts a legacy sdk_session_id state row into
// opts.Provider's continuation (the legacy row is always deleted). inbound.db
// is opened later, read-only, per read.
func OpenAgent(ctx context.Context, dir string, opts AgentOptions) (*Agent, error) {
	if dir == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "agent: session folder is empty")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "agent: session folder %s does not exist", dir)
	}
	a := &Agent{dir: dir, opts: opts, inboundPath: filepath.Join(dir, InboundFile), outboundPath: filepath.Join(dir, OutboundFile)}
	a.now = opts.Now
	if a.now == nil {
		a.now = time.Now
	}
	a.log = opts.Logger
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.opts.PollInterval <= 0 {
		a.opts.PollInterval = DefaultPollInterval
	}
	a.modes = newModes(0)
	if opts.SharedGroup {
		a.modes = modes{dir: 0o770, file: 0o660, gid: -1}
	}
	if _, _, err := sqlitedb.CreateFile(a.outboundPath, a.modes.dir, a.modes.file); err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "agent: create %s", a.outboundPath)
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: a.outboundPath, Pragmas: pragmasAgentRW, MaxConns: 2})
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "agent: open %s", a.outboundPath)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, classify(err, "agent: open %s", a.outboundPath)
	}
	a.out = db
	a.w = sqlitedb.NewWriter(conn)
	a.w.Budget = opts.WriteBudget
	err = a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		if err := migrateOutbound(tx); err != nil {
			return err
		}
		if err := tx.ExecScript(OutboundSchema); err != nil {
			return err
		}
		var legacy string
		switch err := tx.QueryRow("SELECT value FROM session_state WHERE key = 'sdk_session_id'").Scan(&legacy); {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		if opts.Provider != "" && legacy != "" {
			if _, err := tx.Exec("INSERT OR IGNORE INTO session_state (key, value, updated_at) VALUES (?, ?, ?)",
				continuationKey(opts.Provider), legacy, FormatTime(a.now())); err != nil {
				return err
			}
			// An empty current value counts as absent.
			if _, err := tx.Exec("UPDATE session_state SET value = ?, updated_at = ? WHERE key = ? AND value = ''",
				legacy, FormatTime(a.now()), continuationKey(opts.Provider)); err != nil {
				return err
			}
		}
		_, err := tx.Exec("DELETE FROM session_state WHERE key = 'sdk_session_id'")
		return err
	})
	if err != nil {
		a.w.Close()
		db.Close()
		return nil, classify(err, "agent: initialize %s", a.outboundPath)
	}
	return a, nil
}

func continuationKey(provider string) string { return "continuation:" + strings.ToLower(provider) }

// Close closes the outbound handle and the watcher.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	wt := a.watcher
	a.mu.Unlock()
	if wt != nil {
		wt.Close()
	}
	err := a.w.Close()
	if cerr := a.out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Dir returns the session folder.
func (a *Agent) Dir() string { return a.dir }

// withInbound runs fn on a fresh read-only connection to inbound.db
// (mmap off): a cached handle can keep stale pages across a container mount.
func (a *Agent) withInbound(ctx context.Context, fn func(q queryer) error) error {
	return readRO(ctx, a.inboundPath, pragmasAgentIn, fn, "agent: read inbound")
}

func (a *Agent) outQ(ctx context.Context) queryer { return dbQueryer{ctx, a.out} }

// ClearStaleProcessing deletes processing acks left by a previous container
// (run at start); returns the rows deleted.
func (a *Agent) ClearStaleProcessing(ctx context.Context) (int, error) {
	var n int64
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		r, err := tx.Exec("DELETE FROM processing_ack WHERE status = 'processing'")
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return int(n), classify(err, "agent: clear stale processing")
}

// Poll returns the next batch, oldest first: the newest opts.Limit due rows
// that are neither acked (any status) nor kind='system' — excluded before
// the limit, so unacked system rows cannot starve traffic — with on_wake
// rows only on FirstPoll. When none of the newest rows has trigger=1 but an
// older processable one has, the window ends at the newest such row. A
// window without a trigger=1 row returns nil: nothing to do yet.
func (a *Agent) Poll(ctx context.Context, opts PollOptions) ([]InboundRow, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultPollLimit
	}
	var cands []InboundRow
	err := a.withInbound(ctx, func(q queryer) error {
		sel, hasOnWake, err := a.inboundSelect(q)
		if err != nil {
			return err
		}
		where := ""
		if hasOnWake && !opts.FirstPoll {
			where = " AND on_wake = 0"
		}
		rows, err := q.Query("SELECT "+sel+` FROM messages_in
 WHERE status = 'pending' AND (process_after IS NULL OR datetime(process_after) <= datetime(?))
 AND kind != 'system'`+where+` ORDER BY seq DESC, timestamp DESC`, FormatTime(a.now()))
		if err != nil {
			return err
		}
		cands, err = collectInbound(rows)
		return err
	})
	if err := a.countMalformed(err); err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, nil
	}
	acked, err := a.ackedAmong(ctx, cands)
	if err != nil {
		return nil, err
	}
	rest := cands[:0]
	for _, r := range cands {
		if !acked[r.ID] {
			rest = append(rest, r)
		}
	}
	// rest is newest first.
	end := -1
	for i, r := range rest {
		if r.Trigger {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, nil
	}
	start := 0
	if end >= limit {
		start = end
	}
	window := rest[start:min(start+limit, len(rest))]
	out := make([]InboundRow, len(window))
	for i, r := range window {
		out[len(window)-1-i] = r
	}
	return out, nil
}

// countMalformed tracks consecutive polls that found inbound.db malformed
// and turns the tenth into ErrInboundMalformed. Busy and hot-journal errors
// (the host is committing) are transient and do not count.
func (a *Agent) countMalformed(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil || !sqlitedb.IsCorrupt(err) {
		a.malformedN = 0
		return err
	}
	a.malformedN++
	if a.malformedN >= MaxMalformedPolls {
		return sessiondb.Wrap(sessiondb.EINTERNAL, errors.Join(ErrInboundMalformed, err), "%d consecutive polls", a.malformedN)
	}
	return err
}

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

// inboundSelect returns the messages_in select list for this file, with
// defaults standing in for columns an older file lacks (the agent cannot
// migrate a read-only file), probing table_info once.
func (a *Agent) inboundSelect(q queryer) (string, bool, error) {
	a.mu.Lock()
	sel, onWake := a.inSelect, a.hasOnWake
	a.mu.Unlock()
	if sel != "" {
		return sel, onWake, nil
	}
	cols, err := columns(q, "messages_in")
	if err != nil {
		return "", false, err
	}
	defaults := map[string]string{"series_id": "id", "trigger": "1", "source_session_id": "NULL", "on_wake": "0"}
	var parts []string
	for _, c := range strings.Split(inboundCols, ",") {
		c = strings.TrimSpace(c)
		if d, ok := defaults[c]; ok && !cols[c] {
			parts = append(parts, d+" AS "+c)
		} else {
			parts = append(parts, c)
		}
	}
	sel, onWake = strings.Join(parts, ", "), cols["on_wake"]
	a.mu.Lock()
	a.inSelect, a.hasOnWake = sel, onWake
	a.mu.Unlock()
	return sel, onWake, nil
}

// ackedAmong returns which of rows have a processing_ack row.
func (a *Agent) ackedAmong(ctx context.Context, rows []InboundRow) (map[string]bool, error) {
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	acked := map[string]bool{}
	err := inChunks(ids, func(part []any, ph string) error {
		set, err := idSet(a.outQ(ctx), "SELECT message_id FROM processing_ack WHERE message_id IN ("+ph+")", part...)
		maps.Copy(acked, set)
		return err
	})
	if err != nil {
		return nil, classify(err, "agent: read acks")
	}
	return acked, nil
}

func (a *Agent) ack(ctx context.Context, status string, ids []string) error {
	for _, id := range ids {
		if id == "" {
			return sessiondb.Errorf(sessiondb.EINVALID, "ack: message id is empty")
		}
		if err := checkText("message id", id); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		return nil
	}
	now := FormatTime(a.now())
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		for _, id := range ids {
			if _, err := tx.Exec("INSERT OR REPLACE INTO processing_ack (message_id, status, status_changed) VALUES (?, ?, ?)", id, status, now); err != nil {
				return err
			}
		}
		return nil
	})
	return classify(err, "agent: ack %s", status)
}

// MarkProcessing acks ids as processing (claimed by this container).
func (a *Agent) MarkProcessing(ctx context.Context, ids ...string) error {
	return a.ack(ctx, AckProcessing, ids)
}

// MarkCompleted acks ids as completed (idempotent).
func (a *Agent) MarkCompleted(ctx context.Context, ids ...string) error {
	return a.ack(ctx, AckCompleted, ids)
}

// MarkFailed acks ids as failed.
func (a *Agent) MarkFailed(ctx context.Context, ids ...string) error {
	return a.ack(ctx, AckFailed, ids)
}

// inboundMax returns MAX(seq) of messages_in, re-reading only when the file
// changed; unreadable → the last value seen.
func (a *Agent) inboundMax(ctx context.Context) int64 {
	sig := filesig.Of(a.inboundPath)
	a.mu.Lock()
	last, lastSig := a.lastInSeq, a.inSeqSig
	a.mu.Unlock()
	if sig.Found() && sig == lastSig {
		return last
	}
	var m int64
	err := a.withInbound(ctx, func(q queryer) error {
		var err error
		m, err = maxSeq(q, "messages_in")
		return err
	})
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
// "files" key, listed there.
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
				m.ID, seq, nullStr(m.InReplyTo), FormatTime(now), nullTime(m.DeliverAfter), nullStr(m.Recurrence), m.Kind,
				nullStr(m.Routing.PlatformID), nullStr(m.Routing.ChannelType), nullStr(m.Routing.ThreadID), string(content))
			if err == nil {
				return nil
			}
			if !sqlitedb.IsUnique(err) || attempt >= 5 {
				return err
			}
			inMax = max(inMax, seq)
		}
	})
	if err != nil {
		if errCode(err) == "" {
			err = classify(err, "agent: send")
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

// MessageIDBySeq names the message with the given seq for edits and
// reactions: even → the inbound id; odd → the delivered platform message id
// if any, else the outbound id. A seq absent from its parity's table is
// looked up in the other. Unknown → not_found.
func (a *Agent) MessageIDBySeq(ctx context.Context, seq int64) (string, error) {
	id, _, err := a.bySeq(ctx, seq)
	return id, err
}

// RoutingBySeq returns the routing of the message with the given seq.
func (a *Agent) RoutingBySeq(ctx context.Context, seq int64) (Routing, error) {
	_, r, err := a.bySeq(ctx, seq)
	return r, err
}

func (a *Agent) bySeq(ctx context.Context, seq int64) (string, Routing, error) {
	if seq <= 0 {
		return "", Routing{}, sessiondb.Errorf(sessiondb.EINVALID, "seq %d: want a positive message number", seq)
	}
	lookIn := func() (string, Routing, bool, error) {
		var id string
		var r Routing
		found := false
		err := a.withInbound(ctx, func(q queryer) error {
			rows, err := q.Query("SELECT id, channel_type, platform_id, thread_id FROM messages_in WHERE seq = ?", seq)
			if err != nil {
				return err
			}
			defer rows.Close()
			if rows.Next() {
				var ct, pid, tid sql.NullString
				if err := rows.Scan(&id, &ct, &pid, &tid); err != nil {
					return err
				}
				r, found = Routing{ct.String, pid.String, tid.String}, true
			}
			return rows.Err()
		})
		return id, r, found, err
	}
	lookOut := func() (string, Routing, bool, error) {
		rows, err := a.out.QueryContext(ctx, "SELECT id, channel_type, platform_id, thread_id FROM messages_out WHERE seq = ?", seq)
		if err != nil {
			return "", Routing{}, false, classify(err, "agent: read outbound")
		}
		var id string
		var ct, pid, tid sql.NullString
		found := rows.Next()
		if found {
			err = rows.Scan(&id, &ct, &pid, &tid)
		}
		rows.Close()
		if err != nil || !found {
			return "", Routing{}, false, classify(err, "agent: read outbound")
		}
		// A delivered row is named by the platform's id.
		_ = a.withInbound(ctx, func(q queryer) error {
			rows, err := q.Query("SELECT platform_message_id FROM delivered WHERE message_out_id = ? AND platform_message_id IS NOT NULL", id)
			if err != nil {
				return err
			}
			defer rows.Close()
			if rows.Next() {
				var p string
				if rows.Scan(&p) == nil && p != "" {
					id = p
				}
			}
			return nil
		})
		return id, Routing{ct.String, pid.String, tid.String}, true, nil
	}
	order := []func() (string, Routing, bool, error){lookIn, lookOut}
	if seq%2 == 1 {
		order[0], order[1] = order[1], order[0]
	}
	for _, look := range order {
		id, r, found, err := look()
		if err != nil {
			return "", Routing{}, err
		}
		if found {
			return id, r, nil
		}
	}
	return "", Routing{}, sessiondb.Errorf(sessiondb.ENOTFOUND, "no message with seq %d", seq)
}

// SessionRouting returns session_routing row 1 (zero when absent, also when
// an older inbound.db has no such table).
func (a *Agent) SessionRouting(ctx context.Context) (Routing, error) {
	var r Routing
	err := a.withInbound(ctx, func(q queryer) error {
		cols, err := columns(q, "session_routing")
		if err != nil || len(cols) == 0 {
			return err
		}
		rows, err := q.Query("SELECT channel_type, platform_id, thread_id FROM session_routing WHERE id = 1")
		if err != nil {
			return err
		}
		defer rows.Close()
		if rows.Next() {
			var ct, pid, tid sql.NullString
			if err := rows.Scan(&ct, &pid, &tid); err != nil {
				return err
			}
			r = Routing{ct.String, pid.String, tid.String}
		}
		return rows.Err()
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

// readDestinations reads the destinations table by name.
func readDestinations(q queryer) ([]Destination, error) {
	rows, err := q.Query("SELECT name, display_name, type, channel_type, platform_id, agent_group_id FROM destinations ORDER BY name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Destination
	for rows.Next() {
		var d Destination
		var dn, ct, pid, ag sql.NullString
		if err := rows.Scan(&d.Name, &dn, &d.Type, &ct, &pid, &ag); err != nil {
			return nil, err
		}
		d.DisplayName, d.ChannelType, d.PlatformID, d.AgentGroupID = dn.String, ct.String, pid.String, ag.String
		out = append(out, d)
	}
	return out, rows.Err()
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

// AwaitQuestionResponse waits (timeout ≤ 0: 300 s) for a pending, unacked
// kind='system' row whose content holds "questionId":"<id>", acks it
// completed and returns it. It is woken by inbound changes and polls at
// PollInterval. No response in time → not_found (wrapping
// context.DeadlineExceeded).
func (a *Agent) AwaitQuestionResponse(ctx context.Context, questionID string, timeout time.Duration) (InboundRow, error) {
	if questionID == "" {
		return InboundRow{}, sessiondb.Errorf(sessiondb.EINVALID, "question id is empty")
	}
	if timeout <= 0 {
		timeout = DefaultQuestionTimeout
	}
	needle := `"questionId":` + string(marshalCompact(questionID))
	return a.await(ctx, timeout, "response to question "+questionID,
		"kind = 'system' AND instr(content, ?) > 0", needle)
}

// AwaitCLIResponse waits (timeout ≤ 0: 30 s) for the pending, unacked row
// cli-resp-<requestID>, acks it completed and returns it.
func (a *Agent) AwaitCLIResponse(ctx context.Context, requestID string, timeout time.Duration) (InboundRow, error) {
	if requestID == "" {
		return InboundRow{}, sessiondb.Errorf(sessiondb.EINVALID, "request id is empty")
	}
	if timeout <= 0 {
		timeout = DefaultCLIResponseTimeout
	}
	return a.await(ctx, timeout, "CLI response "+requestID, "id = ?", "cli-resp-"+requestID)
}

func (a *Agent) await(ctx context.Context, timeout time.Duration, what, where string, arg any) (InboundRow, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var cands []InboundRow
		err := a.withInbound(ctx, func(q queryer) error {
			sel, _, err := a.inboundSelect(q)
			if err != nil {
				return err
			}
			rows, err := q.Query("SELECT "+sel+" FROM messages_in WHERE status = 'pending' AND "+where+" ORDER BY seq", arg)
			if err != nil {
				return err
			}
			cands, err = collectInbound(rows)
			return err
		})
		if err != nil && errCode(err) != sessiondb.EBUSY {
			return InboundRow{}, err
		}
		if len(cands) > 0 {
			acked, err := a.ackedAmong(ctx, cands)
			if err != nil {
				return InboundRow{}, err
			}
			for _, r := range cands {
				if !acked[r.ID] {
					if err := a.MarkCompleted(context.WithoutCancel(ctx), r.ID); err != nil {
						return InboundRow{}, err
					}
					return r, nil
				}
			}
		}
		if err := a.WaitInbound(ctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return InboundRow{}, sessiondb.Wrap(sessiondb.ENOTFOUND, err, "no %s within %s", what, timeout)
			}
			return InboundRow{}, err
		}
	}
}

// WaitInbound blocks until inbound.db changes, PollInterval passes (rows
// also become due by time alone), or ctx ends (then ctx's error).
func (a *Agent) WaitInbound(ctx context.Context) error {
	w, err := a.inboundWatcher()
	if err != nil {
		return err
	}
	_, err = w.Wait(ctx, a.opts.PollInterval)
	return err
}

func (a *Agent) inboundWatcher() (*Watcher, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "agent is closed")
	}
	if a.watcher == nil {
		w, err := NewWatcher(a.dir, []string{InboundFile, InboundFile + "-journal"},
			WatchOptions{Interval: a.opts.PollInterval, NoNotify: a.opts.NoNotify})
		if err != nil {
			return nil, err
		}
		a.watcher = w
	}
	return a.watcher, nil
}

func checkKey(key string) error {
	if key == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "state key is empty")
	}
	return checkText("state key", key)
}

// StateGet returns a session_state value; found is false when absent.
func (a *Agent) StateGet(ctx context.Context, key string) (value string, found bool, err error) {
	if err := checkKey(key); err != nil {
		return "", false, err
	}
	err = a.out.QueryRowContext(ctx, "SELECT value FROM session_state WHERE key = ?", key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, classify(err, "agent: read state %q", key)
	}
	return value, true, nil
}

// StateSet upserts a session_state value.
func (a *Agent) StateSet(ctx context.Context, key, value string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkText("state value", value); err != nil {
		return err
	}
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec(`INSERT INTO session_state (key, value, updated_at) VALUES (?, ?, ?)
 ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, key, value, FormatTime(a.now()))
		return err
	})
	return classify(err, "agent: write state %q", key)
}

// StateDelete deletes a session_state key (absent is not an error).
func (a *Agent) StateDelete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("DELETE FROM session_state WHERE key = ?", key)
		return err
	})
	return classify(err, "agent: delete state %q", key)
}

// StateList returns every session_state key and value.
func (a *Agent) StateList(ctx context.Context) (map[string]string, error) {
	rows, err := a.out.QueryContext(ctx, "SELECT key, value FROM session_state")
	if err != nil {
		return nil, classify(err, "agent: list state")
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, classify(err, "agent: list state")
		}
		out[k] = v
	}
	return out, classify(rows.Err(), "agent: list state")
}

func checkProvider(p string) error {
	if p == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "provider is empty")
	}
	return checkText("provider", p)
}

// Continuation returns the provider's resume id (key
// continuation:<provider lowercased>), "" when none.
func (a *Agent) Continuation(ctx context.Context, provider string) (string, error) {
	if err := checkProvider(provider); err != nil {
		return "", err
	}
	v, _, err := a.StateGet(ctx, continuationKey(provider))
	return v, err
}

// SetContinuation stores the provider's resume id.
func (a *Agent) SetContinuation(ctx context.Context, provider, id string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	return a.StateSet(ctx, continuationKey(provider), id)
}

// ClearContinuation deletes the provider's resume id (on /clear or an
// "invalid session" from the provider).
func (a *Agent) ClearContinuation(ctx context.Context, provider string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	return a.StateDelete(ctx, continuationKey(provider))
}

// TouchHeartbeat sets .heartbeat's mtime to the agent clock's now, creating
// the file (0600) if missing. It is not a database write.
func (a *Agent) TouchHeartbeat() error {
	p := filepath.Join(a.dir, HeartbeatFile)
	now := a.now()
	if err := os.Chtimes(p, now, now); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "touch %s", p)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", p)
	}
	if f != nil {
		f.Close()
	}
	if err := os.Chtimes(p, now, now); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "touch %s", p)
	}
	return nil
}

// SetToolInFlight records the tool now running and its declared timeout
// (0 = none), so the host's stuck check allows a long Bash call.
func (a *Agent) SetToolInFlight(ctx context.Context, tool string, declaredTimeoutMS int64) error {
	if tool == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "tool name is empty")
	}
	if err := checkText("tool", tool); err != nil {
		return err
	}
	if declaredTimeoutMS < 0 {
		return sessiondb.Errorf(sessiondb.EINVALID, "declared timeout %d ms is negative", declaredTimeoutMS)
	}
	now := FormatTime(a.now())
	var ms any
	if declaredTimeoutMS > 0 {
		ms = declaredTimeoutMS
	}
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec(`INSERT INTO container_state (id, current_tool, tool_declared_timeout_ms, tool_started_at, updated_at)
 VALUES (1, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET current_tool = excluded.current_tool,
 tool_declared_timeout_ms = excluded.tool_declared_timeout_ms, tool_started_at = excluded.tool_started_at, updated_at = excluded.updated_at`,
			tool, ms, now, now)
		return err
	})
	return classify(err, "agent: set tool in flight")
}

// ClearToolInFlight records that no tool is running.
func (a *Agent) ClearToolInFlight(ctx context.Context) error {
	now := FormatTime(a.now())
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec(`INSERT INTO container_state (id, current_tool, tool_declared_timeout_ms, tool_started_at, updated_at)
 VALUES (1, NULL, NULL, NULL, ?) ON CONFLICT(id) DO UPDATE SET current_tool = NULL,
 tool_declared_timeout_ms = NULL, tool_started_at = NULL, updated_at = excluded.updated_at`, now)
		return err
	})
	return classify(err, "agent: clear tool in flight")
}

// ContainerState reads this session's container_state row.
func (a *Agent) ContainerState(ctx context.Context) (ContainerState, error) {
	st, err := readContainerState(a.outQ(ctx))
	return st, classify(err, "agent: read container state")
}
