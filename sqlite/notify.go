package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/filewatch"
)

var _ sessiondb.MessageWaiter = (*Store)(nil)

// changes tells waiters that the file may hold new rows: this Store's own
// commits signal it at once (the writer's commit hook), and commits by
// other processes through a watch on the file, its WAL and its journal,
// started on the first wait. A signal closes the current generation's
// channel, waking every waiter, who then looks at the file once.
type changes struct {
	mu      sync.Mutex
	gen     chan struct{}
	watcher *filewatch.Watcher
	stop    chan struct{}
	wg      sync.WaitGroup
	closed  bool
}

func newChanges() *changes { return &changes{gen: make(chan struct{}), stop: make(chan struct{})} }

// current returns the channel closed by the next change. Take it before
// looking at the file, so a commit between the look and the wait wakes.
func (c *changes) current() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// signal wakes the waiters of the current generation.
func (c *changes) signal() {
	c.mu.Lock()
	close(c.gen)
	c.gen = make(chan struct{})
	c.mu.Unlock()
}

// watch starts the file watch once; a folder the OS cannot watch falls
// back to polling the files' size and mtime (filewatch does both).
func (c *changes) watch(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watcher != nil || c.closed {
		return nil
	}
	base := filepath.Base(path)
	w, err := filewatch.NewWatcher(filepath.Dir(path), []string{base, base + "-wal", base + "-journal"}, filewatch.Options{})
	if err != nil {
		return err
	}
	c.watcher = w
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			select {
			case <-c.stop:
				return
			case <-w.C():
				c.signal()
			}
		}
	}()
	return nil
}

func (c *changes) close() {
	c.mu.Lock()
	c.closed = true
	w := c.watcher
	c.mu.Unlock()
	if w != nil {
		close(c.stop)
		c.wg.Wait()
		w.Close()
	}
}

// WaitForMessages returns as soon as the session holds a visible message
// with an id above afterID, with the newest such id; at once when it
// already does. It is woken by this Store's own commits and, for other
// processes' commits, by file-change notification on the database and its
// WAL (with a polling fallback on the files' size and mtime where the OS
// gives no notification); it never polls the database. ctx ending returns
// its error (code busy for a deadline).
func (s *Store) WaitForMessages(ctx context.Context, sessionID string, afterID int64) (int64, error) {
	if afterID < 0 {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "wait for messages of %s: after id %d is negative", sessionID, afterID)
	}
	if err := s.changes.watch(s.path); err != nil {
		return 0, sessiondb.Wrap(sessiondb.EINTERNAL, err, "watch %s for changes", s.path)
	}
	// After a wake, an empty look is looked again after short pauses: the
	// notification of another process's commit comes from its write to
	// the WAL, which lands a moment before the commit is published in the
	// WAL index (-shm, written through memory, which no notification
	// reports), so the first look can come too early. Without the second
	// looks such a commit would wait for the watch's polling fallback.
	rechecks := len(wakeRechecks) // none before the first wake
	for {
		gen := s.changes.current()
		newest, err := s.newestAfter(ctx, sessionID, afterID)
		if err != nil {
			return 0, s.readErr(err, "wait for messages of %s", sessionID)
		}
		if newest > afterID {
			return newest, nil
		}
		var again *time.Timer
		var againC <-chan time.Time
		if rechecks < len(wakeRechecks) {
			again = time.NewTimer(wakeRechecks[rechecks])
			againC = again.C
			rechecks++
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-gen:
			rechecks = 0
		case <-againC:
		}
		if again != nil {
			again.Stop()
		}
		if err != nil {
			return 0, s.readErr(err, "wait for messages of %s", sessionID)
		}
	}
}

// wakeRechecks are the pauses before the second looks after a wake that
// found nothing (see WaitForMessages): a commit is published within
// microseconds of its WAL write, so a few short looks catch it.
var wakeRechecks = [...]time.Duration{time.Millisecond, 5 * time.Millisecond, 25 * time.Millisecond}

// newestAfter returns the session's newest visible message id above
// afterID, or afterID when there is none. Past a cursor it walks the
// rowids above it (the rows added since, few) instead of the session's
// index entries, which a long session has thousands of.
func (s *Store) newestAfter(ctx context.Context, sessionID string, afterID int64) (int64, error) {
	q := "SELECT MAX(m.id) FROM messages m WHERE m.session_id = ?" + s.q.live
	args := []any{sessionID}
	if afterID > 0 {
		q = "SELECT MAX(m.id) FROM messages m WHERE m.id > ? AND +m.session_id = ?" + s.q.live
		args = []any{afterID, sessionID}
	}
	var n sql.NullInt64
	if err := s.queryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, err
	}
	if !n.Valid {
		return afterID, nil
	}
	return n.Int64, nil
}
