package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
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

	mu        sync.Mutex
	lastInSeq int64
	inSeqSig  filesig.Sig
	modes     modes
	inSelect  string // messages_in select list, probed once
	hasOnWake bool
	watcher   *Watcher
	// pollSaw is the watcher's count of changes (Watcher.Changes) that the
	// latest poll's read saw, waitSaw the count the latest wait returned at.
	pollSaw, waitSaw uint64
	closed           bool
	malformedN       int
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
	db, err := sqlitedb.Open(sqlitedb.Config{Path: a.outboundPath, Pragmas: pragmasAgentRW, MaxConns: 2, BusyTimeout: lockWait})
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "agent: open %s", a.outboundPath)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, sqlitedb.Wrap(err, "agent: open %s", a.outboundPath)
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
		return nil, sqlitedb.Wrap(err, "agent: initialize %s", a.outboundPath)
	}
	return a, nil
}

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
	return readRO(ctx, a.inboundPath, pragmasAgentIn, lockWait, fn, "agent: read inbound")
}

func (a *Agent) outQ(ctx context.Context) queryer { return ctxQueryer{ctx, a.out} }
