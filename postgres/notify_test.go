package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
)

// rawListener LISTENs on the store's channel on a connection of its own,
// without registering as a listener.
func rawListener(t *testing.T, ctx context.Context, url string, s *Store) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(s.channel())); err != nil {
		t.Fatal(err)
	}
	return conn
}

// nextPayload is the payload of the next notification conn receives.
func nextPayload(t *testing.T, ctx context.Context, conn *pgx.Conn) string {
	t.Helper()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("waiting for a notification: %v", err)
	}
	return n.Payload
}

// appendText appends one user message to session id.
func appendText(t *testing.T, ctx context.Context, s *Store, id, text string) int64 {
	t.Helper()
	mid, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: &text})
	if err != nil {
		t.Fatalf("append to %s: %v", id, err)
	}
	return mid
}

// startWaiting has s wait for a message of session id after afterID, and
// returns once s's listener is registered and the wait is in place.
func startWaiting(t *testing.T, ctx context.Context, s *Store, id string, afterID int64) chan error {
	t.Helper()
	woke := make(chan error, 1)
	go func() {
		_, err := s.WaitForMessages(ctx, id, afterID)
		woke <- err
	}()
	for {
		n := waiterCount(s)
		if n > 0 {
			return woke
		}
		if ctx.Err() != nil {
			t.Fatal("the waiter never registered")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listenerRows counts the rows of sessiondb_listeners.
func listenerRows(t *testing.T, url string) int {
	t.Helper()
	return pgtest.Count(t, url, "SELECT count(*) FROM sessiondb_listeners")
}

// TestNoListenerNoNotification: while no process is registered as a
// listener, appends (a lone one and a group commit) send no notification:
// a connection that LISTENs without registering receives a marker sent
// after them first. Once a store waits (registered), an append's
// notification comes again, before the next marker.
func TestNoListenerNoNotification(t *testing.T) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw := rawListener(t, ctx, url, s)
	marker := func(text string) {
		pgtest.Exec(t, url, "SELECT pg_notify($1, $2)", s.channel(), text)
	}

	appendText(t, ctx, s, "good", "lone")
	text := "together"
	batch := []*appendReq{
		{sessionID: "good", args: []any{"user", &text, nil, nil, nil, nil, s.epochNow(), nil, nil, nil, nil, nil}, done: make(chan struct{})},
		{sessionID: "bad", args: []any{"user", &text, nil, nil, nil, nil, s.epochNow(), nil, nil, nil, nil, nil}, done: make(chan struct{})},
	}
	s.app.run(batch)
	for _, r := range batch {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	marker("marker-1")
	if got := nextPayload(t, ctx, raw); got != "marker-1" {
		t.Errorf("with no listener registered, the first notification was %q, want the marker sent after the appends", got)
	}

	// A second process waits on session bad: registered, so appends
	// notify again.
	waiter, err := Open(ctx, url, Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	woke := startWaiting(t, ctx, waiter, "bad", 1<<60)
	if n := listenerRows(t, url); n != 1 {
		t.Errorf("%d listener rows while one store waits, want 1", n)
	}
	appendText(t, ctx, s, "good", "heard")
	marker("marker-2")
	if got := nextPayload(t, ctx, raw); got != notifyKey("good") {
		t.Errorf("with a listener registered, the first notification was %q, want the append's %q", got, notifyKey("good"))
	}
	select {
	case err := <-woke:
		t.Errorf("the waiter of session bad returned (%v) though bad got no message after its id", err)
	default:
	}
}

// TestEveryAppendWakesANewListener: a store in another process (here a
// second Store) that starts waiting while appends are in flight, with no
// other listener registered, is woken by the append it waits for, round
// after round: the append either sees its registration and notifies, or
// committed before the registration and the wait's first look finds it.
func TestEveryAppendWakesANewListener(t *testing.T) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Other appends keep the writer's pipeline busy all along.
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "bad", Role: "user", Content: strPtr("noise")}); err != nil {
				t.Errorf("background append: %v", err)
				return
			}
		}
	}()
	defer func() { close(stop); bg.Wait() }()

	last := int64(0)
	for round := range 60 {
		w, err := Open(ctx, url, Options{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		if n := listenerRows(t, url); n != 0 {
			t.Fatalf("round %d: %d listener rows before the waiter starts, want 0", round, n)
		}
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		woke := make(chan int64, 1)
		go func() {
			id, err := w.WaitForMessages(rctx, "good", last)
			if err != nil {
				t.Errorf("round %d: WaitForMessages: %v", round, err)
			}
			woke <- id
		}()
		// Vary the order of the wait's first look and the append: the
		// append right away (usually before the listener is in place),
		// or once the wait is registered, 0 to 4 ms later (around its
		// first look).
		if mode := round % 6; mode > 0 {
			for {
				n := waiterCount(w)
				if n > 0 || rctx.Err() != nil {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			time.Sleep(time.Duration(mode-1) * time.Millisecond)
		}
		id := appendText(t, ctx, s, "good", fmt.Sprintf("round %d", round))
		got := <-woke
		rcancel()
		if got < id {
			t.Fatalf("round %d: the waiter woke with message %d, want %d: a lost wake", round, got, id)
		}
		w.Close()
		last = id
	}
}

// TestDeadListenerRowsArePruned: a listener's registration deletes the
// rows of listeners whose backend is gone (a pid no backend has, a live
// pid with another start: the pid reused) and keeps a live one's.
func TestDeadListenerRowsArePruned(t *testing.T) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	live, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(context.Background())
	if _, err := live.Exec(ctx, `INSERT INTO sessiondb_listeners (pid, backend_start)
SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid();
INSERT INTO sessiondb_listeners (pid, backend_start)
SELECT pid, backend_start - interval '1 hour' FROM pg_stat_activity WHERE pid = pg_backend_pid();
INSERT INTO sessiondb_listeners (pid, backend_start) VALUES (2147483000, now() - interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	appendText(t, ctx, s, "good", "there")
	// A wait for what is there already returns at once, its listener
	// registered.
	if _, err := s.WaitForMessages(ctx, "good", 0); err != nil {
		t.Fatal(err)
	}
	rows, err := live.Query(ctx, `SELECT l.pid = pg_backend_pid(), coalesce(l.backend_start = a.backend_start, false), a.application_name
FROM sessiondb_listeners l LEFT JOIN pg_stat_activity a ON a.pid = l.pid ORDER BY 1 DESC`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		mine, sameStart bool
		app             *string
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.mine, &x.sameStart, &x.app)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].mine || !got[0].sameStart || got[1].mine || !got[1].sameStart || got[1].app == nil || *got[1].app != s.Schema() {
		t.Errorf("listener rows after a registration = %+v; want the live connection's own row and the store's listener, the dead and reused-pid rows gone", got)
	}
}

// TestClosedStoreRemovesItsListenerRow: a store that waited deletes its
// listener row when it closes, so appends stop notifying.
func TestClosedStoreRemovesItsListenerRow(t *testing.T) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := Open(ctx, url, Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	startWaiting(t, ctx, w, "good", 1<<60)
	if n := listenerRows(t, url); n != 1 {
		t.Fatalf("%d listener rows while a store waits, want 1", n)
	}
	w.Close()
	if n := listenerRows(t, url); n != 0 {
		t.Errorf("%d listener rows after the waiting store closed, want 0", n)
	}
	// And appends stop notifying.
	raw := rawListener(t, ctx, url, s)
	appendText(t, ctx, s, "good", "after close")
	pgtest.Exec(t, url, "SELECT pg_notify($1, 'marker')", s.channel())
	if got := nextPayload(t, ctx, raw); got != "marker" {
		t.Errorf("after the waiter closed, the first notification was %q, want the marker", got)
	}
}

// TestReadOnlyStoreRegisters: a read-only store's waiter registers its
// listener (the registration is the one write a read-only store makes)
// and is woken by another store's append.
func TestReadOnlyStoreRegisters(t *testing.T) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ro, err := Open(ctx, url, Options{ReadOnly: true, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	woke := startWaiting(t, ctx, ro, "good", 0)
	if n := listenerRows(t, url); n != 1 {
		t.Errorf("%d listener rows while a read-only store waits, want 1", n)
	}
	appendText(t, ctx, s, "good", "for the reader")
	if err := <-woke; err != nil {
		t.Fatalf("the read-only store's waiter: %v", err)
	}
}

// TestUnregisteredListenerStillWakes: a store whose role may not write
// the listeners' table listens unregistered, and its waiter still wakes
// on another store's append, which sends no notification (no listener is
// registered): it looks again every pollEvery.
func TestUnregisteredListenerStillWakes(t *testing.T) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	role := s.Schema() + "_reader"
	pgtest.Exec(t, url, "CREATE ROLE "+role+" LOGIN; GRANT USAGE ON SCHEMA "+s.Schema()+" TO "+role+
		"; GRANT SELECT ON ALL TABLES IN SCHEMA "+s.Schema()+" TO "+role)
	t.Cleanup(func() { pgtest.Exec(t, url, "DROP OWNED BY "+role+"; DROP ROLE "+role) })
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Open(ctx, url+"&user="+role, Options{ReadOnly: true, MaxConns: 2})
	if err != nil {
		t.Fatalf("open as %s (server user %s): %v", role, cfg.User, err)
	}
	defer ro.Close()
	woke := startWaiting(t, ctx, ro, "good", 0)
	// Let the wait's first look pass, so that only a later look can see
	// the append.
	time.Sleep(200 * time.Millisecond)
	if n := listenerRows(t, url); n != 0 {
		t.Errorf("%d listener rows while only a role that may not register waits, want 0", n)
	}
	appendText(t, ctx, s, "good", "unannounced")
	select {
	case err := <-woke:
		if err != nil {
			t.Fatalf("the unregistered waiter: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the unregistered waiter never woke")
	}
}

// TestNotifyFollowsTheListeners: the appender carries the notification in
// an append's pipeline only while the last append saw a listener. The
// first append after a listener registers still notifies (after its
// commit, having seen the row), and once the listener is gone appends
// stop notifying, the one that first sees no row included.
func TestNotifyFollowsTheListeners(t *testing.T) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw := rawListener(t, ctx, url, s)
	marker := func(text string) {
		pgtest.Exec(t, url, "SELECT pg_notify($1, $2)", s.channel(), text)
	}
	expect := func(step, want string) {
		t.Helper()
		if got := nextPayload(t, ctx, raw); got != want {
			t.Errorf("%s: the next notification was %q, want %q", step, got, want)
		}
	}
	appendText(t, ctx, s, "good", "unheard")
	marker("m1")
	expect("no listener", "m1")

	if _, err := raw.Exec(ctx, registerListenerSQL); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		appendText(t, ctx, s, "good", "heard")
		marker("m2")
		expect(fmt.Sprintf("append %d after the listener registered", i+1), notifyKey("good"))
		expect("its marker", "m2")
	}

	if _, err := raw.Exec(ctx, "DELETE FROM sessiondb_listeners"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		appendText(t, ctx, s, "good", "unheard again")
		marker("m3")
		expect(fmt.Sprintf("append %d after the listener left", i+1), "m3")
	}
}

// TestListenerStartingDuringAnAppendWakes: an append whose transaction
// read the listeners' table before a listener registered, and commits
// after that listener's first look, still reaches the waiter: the
// registration waits for that transaction to commit. The append is held
// between its read and its commit by a lock on its session's row, for
// less than the registration's lock timeout, and for more: then the
// registration gives up, tries again, and registers once the append is
// in, waking the waiter to look again.
func TestListenerStartingDuringAnAppendWakes(t *testing.T) {
	for _, hold := range []time.Duration{200 * time.Millisecond, 2500 * time.Millisecond} {
		t.Run(hold.String(), func(t *testing.T) { listenerDuringAppend(t, hold) })
	}
}

func listenerDuringAppend(t *testing.T, hold time.Duration) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tx := holdGoodRow(t, ctx, url)
	// Read on a connection of its own: a transaction sees one snapshot
	// of pg_stat_activity.
	lockWaits := func() int {
		return pgtest.Count(t, url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", s.Schema())
	}
	appended := make(chan int64, 1)
	go func() {
		text := "held"
		id, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "good", Role: "user", Content: &text})
		if err != nil {
			t.Errorf("append: %v", err)
		}
		appended <- id
	}()
	for lockWaits() < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	w, err := Open(ctx, url, Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	woke := make(chan int64, 1)
	go func() {
		id, err := w.WaitForMessages(wctx, "good", 0)
		if err != nil {
			t.Errorf("WaitForMessages: %v", err)
		}
		woke <- id
	}()
	// The listener either waits for the append (a second lock wait) or,
	// registered without waiting, has its waiter in place; then give its
	// first look time to pass.
	for {
		n := waiterCount(w)
		if n > 0 || lockWaits() >= 2 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(hold)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	id := <-appended
	if got := <-woke; got != id || id == 0 {
		t.Errorf("the waiter woke with message %d, want %d: a lost wake", got, id)
	}
	if n := listenerRows(t, url); n != 1 {
		t.Errorf("%d listener rows once the waiter woke, want 1 (its listener registered)", n)
	}
}

// waiterCount is how many sessions s's notifier has waiters for.
func waiterCount(s *Store) int {
	s.notify.mu.Lock()
	defer s.notify.mu.Unlock()
	return len(s.notify.waiters)
}
