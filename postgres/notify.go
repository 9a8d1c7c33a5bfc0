package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

var _ sessiondb.MessageWaiter = (*Store)(nil)

// channel is the NOTIFY channel on which appends to this store's schema
// are announced, with the session's notifyKey as payload. Channel names
// are identifiers (at most 63 bytes), so a long schema name is hashed.
func (s *Store) channel() string {
	c := "sessiondb." + s.schema
	if len(c) > 63 {
		h := fnv.New64a()
		h.Write([]byte(s.schema))
		c = fmt.Sprintf("sessiondb.%x", h.Sum64())
	}
	return c
}

// notifyKey is the payload announcing an append to sessionID: 32 hex
// digits of its SHA-256, whatever the id's length. A NOTIFY payload must
// be under 8,000 bytes, and the id's own bytes made every append to a
// session with a longer id fail (with every append batched with it).
// Two ids sharing a key only wake each other's waiters, who look again.
func notifyKey(sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return hex.EncodeToString(sum[:16])
}

// notifier holds one listening connection per Store, opened on the first
// wait, and wakes the waiters of a session when its notification comes.
type notifier struct {
	s *Store

	mu      sync.Mutex
	started bool
	waiters map[string]map[chan struct{}]struct{} // by notifyKey
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

func newNotifier(s *Store) *notifier {
	return &notifier{s: s, waiters: map[string]map[chan struct{}]struct{}{}}
}

func (n *notifier) close() {
	n.mu.Lock()
	stop := n.stop
	n.mu.Unlock()
	if stop != nil {
		stop()
	}
	n.wg.Wait()
}

// register returns a channel signalled when sessionID may have new
// messages, starting the listener if needed; unregister with the returned
// function.
func (n *notifier) register(sessionID string) (chan struct{}, func()) {
	ch, key := make(chan struct{}, 1), notifyKey(sessionID)
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.started {
		n.started = true
		ctx, cancel := context.WithCancel(context.Background())
		n.stop = cancel
		ready := make(chan struct{})
		n.wg.Add(1)
		go n.listen(ctx, ready)
		n.mu.Unlock()
		<-ready // LISTEN is in place (or failed and will retry) before the first check
		n.mu.Lock()
	}
	if n.waiters[key] == nil {
		n.waiters[key] = map[chan struct{}]struct{}{}
	}
	n.waiters[key][ch] = struct{}{}
	return ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.waiters[key], ch)
		if len(n.waiters[key]) == 0 {
			delete(n.waiters, key)
		}
	}
}

// wake signals the waiters of the sessions announced by key (a
// notifyKey), or of every session when all.
func (n *notifier) wake(key string, all bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, set := range n.waiters {
		if !all && k != key {
			continue
		}
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// listen keeps a connection LISTENing on the store's channel, registered
// in sessiondb_listeners (subscribe), and reconnects when it is lost;
// after a reconnect every waiter is woken to look again, since
// notifications sent meanwhile are gone. When it stops it deletes its row.
func (n *notifier) listen(ctx context.Context, ready chan struct{}) {
	defer n.wg.Done()
	once := sync.OnceFunc(func() { close(ready) })
	defer once()
	for pause := 50 * time.Millisecond; ctx.Err() == nil; pause = min(2*pause, 5*time.Second) {
		conn, err := pgx.ConnectConfig(ctx, n.s.pool.Config().ConnConfig.Copy())
		if err == nil {
			var registered bool
			if registered, err = n.subscribe(ctx, conn); err == nil {
				once()
				n.wake("", true)
				pause = 50 * time.Millisecond
				err = n.receive(ctx, conn, registered)
				if registered && ctx.Err() != nil {
					n.unsubscribe(conn)
				}
			}
			conn.Close(context.Background())
		}
		if ctx.Err() == nil {
			n.s.log.Warn("message notifications: reconnecting", "err", err)
		}
		once()
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// pruneListenersSQL deletes the rows of listeners whose backend is gone:
// no backend has the row's pid and start. A backend of another role shows
// its pid but not its start (unless the role may read all statistics), so
// a row whose pid such a backend holds is kept; at worst a stale row costs
// notifications until that backend ends too.
const pruneListenersSQL = `DELETE FROM sessiondb_listeners l WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a
    WHERE a.pid = l.pid AND (a.backend_start = l.backend_start OR a.backend_start IS NULL))`

// registerListenerSQL records the connection's own backend as a listener.
const registerListenerSQL = `INSERT INTO sessiondb_listeners (pid, backend_start)
SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid() ON CONFLICT DO NOTHING`

// registerLockTimeout bounds the registration's wait for its lock. While
// it waits, the appends that would read the table wait behind it; an
// append held up (by a lock on its session's row another client keeps)
// would hold them all. Past the bound the registration gives up and
// tries again after a pause, its waiters looking again once it is in.
const registerLockTimeout = "SET LOCAL lock_timeout = '1s'"

// pollEvery is how often the waiters look again when the listener could
// not register itself, and so may miss appends.
const pollEvery = time.Second

// subscribe LISTENs on conn and records conn's backend in
// sessiondb_listeners, in one transaction, and prunes the rows of
// listeners that are gone. Appends notify only when their transaction saw
// a row (listeningSQL, appender.settle), and no wake is lost while a
// listener starts. Its transaction first locks the table against every
// reader: it waits for the appends whose transaction read the table to
// commit, and holds back the appends that read it after, until it
// commits. The row and the LISTEN commit together before the first
// waiter's first look at the messages (register waits for ready). So an
// append either read the table before the lock, committed before the row
// did, and the first look finds its message; or it read the table after
// the row's commit (a statement takes its snapshot after its locks), saw
// the row, and notifies after its own commit, when the LISTEN is in
// place.
//
// The transaction is read-write even in a read-only store: its waiters
// need the row. A role that may not write the table still LISTENs,
// unregistered (registered false), and its waiters look again every
// pollEvery, since appends notify only while some other listener is
// registered.
func (n *notifier) subscribe(ctx context.Context, conn *pgx.Conn) (registered bool, err error) {
	listen := "LISTEN " + quoteIdent(n.s.channel())
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{AccessMode: pgx.ReadWrite}, func(tx pgx.Tx) error {
		for _, q := range []string{registerLockTimeout, "LOCK TABLE sessiondb_listeners IN ACCESS EXCLUSIVE MODE", listen, pruneListenersSQL, registerListenerSQL} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || !refused(err) || retryable(err) || sqlState(err) == pgLockNotAvailable {
		// A lost race (two listeners pruning the same rows), or the lock
		// not had in time, is tried again on a new connection.
		return err == nil, err
	}
	n.s.log.Warn("message notifications: cannot register as a listener; waiters look again every "+pollEvery.String(), "err", err)
	_, err = conn.Exec(ctx, listen)
	return false, err
}

// unsubscribe deletes the row of conn's backend when the store closes.
// It is best effort: a row left behind only costs notifications until
// the next listener prunes it.
func (n *notifier) unsubscribe(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{AccessMode: pgx.ReadWrite}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "DELETE FROM sessiondb_listeners WHERE pid = pg_backend_pid()")
		return err
	})
	if err != nil {
		n.s.log.Warn("message notifications: unregister the listener", "err", err)
	}
}

// receive wakes the waiters of each notification conn receives until ctx
// ends or the connection fails; unregistered, it also wakes every waiter
// every pollEvery.
func (n *notifier) receive(ctx context.Context, conn *pgx.Conn, registered bool) error {
	for {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if !registered {
			wctx, cancel = context.WithTimeout(ctx, pollEvery)
		}
		note, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			// A process of an older version announces the raw id: its
			// key wakes the same waiters.
			n.wake(note.Payload, false)
			n.wake(notifyKey(note.Payload), false)
		case !registered && ctx.Err() == nil && wctx.Err() != nil:
			n.wake("", true)
		default:
			return err
		}
	}
}

// WaitForMessages returns as soon as the session holds a message with an
// id above afterID, with the newest id; at once when it already does. It
// learns of appends from any process through LISTEN/NOTIFY (the appender
// notifies right after the transaction that commits the rows, while some
// listener is registered: see subscribe), so it never polls, unless its
// role may not register a listener.
func (s *Store) WaitForMessages(ctx context.Context, sessionID string, afterID int64) (int64, error) {
	ch, done := s.notify.register(sessionID)
	defer done()
	for {
		var newest *int64
		if err := s.pool.QueryRow(ctx, "SELECT max(m.id) FROM messages m WHERE m.session_id = $1"+live, sessionID).Scan(&newest); err != nil {
			return 0, s.readErr(err, "wait for messages of %s", sessionID)
		}
		if newest != nil && *newest > afterID {
			return *newest, nil
		}
		select {
		case <-ctx.Done():
			return 0, s.classify(ctx.Err(), "wait for messages of %s", sessionID)
		case <-ch:
		}
	}
}
