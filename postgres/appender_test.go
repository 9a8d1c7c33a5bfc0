package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
)

// batchStore opens a store in a fresh schema, its connections named after
// the schema so a test can find them in pg_stat_activity, and returns it
// with the URL of its schema.
func batchStore(t *testing.T) (*Store, string) {
	t.Helper()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	url = pgtest.WithSearchPath(url, schema) + "&application_name=" + schema
	s, err := Open(context.Background(), url, Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, id := range []string{"good", "bad"} {
		if _, err := s.CreateSession(context.Background(), sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	return s, url
}

// appendTogether makes the appends ms share one group commit: it holds a
// lock on session "good" so that a first append to it (ms[0]) keeps the
// appender busy, waits until every other append is queued behind it (or
// refused before the queue), then lets go, so the appender takes them all
// in one batch. It returns each append's error.
func appendTogether(t *testing.T, s *Store, url string, ms []sessiondb.NewMessage) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tx := holdGoodRow(t, ctx, url)
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	var mu sync.Mutex
	returned := 0
	start := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.AppendMessage(ctx, ms[i])
			mu.Lock()
			returned++
			mu.Unlock()
		}()
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v", what, ctx.Err())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	start(0)
	waitFor("the first append to wait for the lock", func() bool {
		var n int
		err := tx.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
			s.Schema()).Scan(&n)
		return err == nil && n == 1
	})
	for i := 1; i < len(ms); i++ {
		start(i)
	}
	waitFor("every other append to queue", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(s.app.reqs)+returned == len(ms)-1
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
}

// checkBatch holds the outcome of appendTogether to: every append to
// "good" committed, the one at bad failed with the code and text wanted,
// and session good counts exactly its rows.
func checkBatch(t *testing.T, s *Store, ms []sessiondb.NewMessage, errs []error, bad int, code, text string) {
	t.Helper()
	failed := 0
	for i, err := range errs {
		if i == bad {
			if sessiondb.ErrorCode(err) != code || !strings.Contains(err.Error(), text) {
				t.Errorf("the bad append: %v, want %s naming %q", err, code, text)
			}
			continue
		}
		if err != nil {
			failed++
			if failed == 1 {
				t.Errorf("append %d to %s: %v", i, ms[i].SessionID, err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d appends to an unrelated session failed with the bad one", failed, len(ms)-1)
	}
	ctx := context.Background()
	sess, err := s.GetSession(ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.MessageCount(ctx, "good")
	if err != nil || rows != int64(len(ms)-1) || sess.MessageCount != rows {
		t.Errorf("session good holds %d rows (%v), message_count %d; want %d", rows, err, sess.MessageCount, len(ms)-1)
	}
}

// hundred returns 100 appends: 99 to session good, and the one at bad to
// session badID.
func hundred(bad int, badID string) []sessiondb.NewMessage {
	ms := make([]sessiondb.NewMessage, 100)
	for i := range ms {
		c := "hello"
		ms[i] = sessiondb.NewMessage{SessionID: "good", Role: "user", Content: &c}
	}
	ms[bad].SessionID = badID
	return ms
}

// TestLongIDFailsNoBatchMate is issue 18's batch: a session whose id is
// 8,000 bytes (an import took it before ids had a limit) and 100 appends
// committed together, one of them to it. The other 99 commit; the one to
// the long id is refused, naming the limit. (Its NOTIFY payload, the raw
// id, was over PostgreSQL's 8,000 bytes and failed the whole batch.)
func TestLongIDFailsNoBatchMate(t *testing.T) {
	s, url := batchStore(t)
	long := strings.Repeat("x", 8000)
	pgtest.Exec(t, url, "INSERT INTO sessions (id, source, started_at) VALUES ($1, 'cli', 1773566677)", long)
	ms := hundred(50, long)
	checkBatch(t, s, ms, appendTogether(t, s, url, ms), 50, sessiondb.EINVALID, "bytes, the limit is 255")
}

// TestRefusedRowFailsAlone: the server refuses one row of a group commit
// (here a trigger of another program's; a constraint would do the same).
// That append fails with the server's reason; the 99 batched with it
// commit.
func TestRefusedRowFailsAlone(t *testing.T) {
	s, url := batchStore(t)
	pgtest.Exec(t, url, `CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.session_id = 'bad' THEN RAISE EXCEPTION 'no rows for bad'; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_bad BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_bad()`)
	ms := hundred(37, "bad")
	checkBatch(t, s, ms, appendTogether(t, s, url, ms), 37, sessiondb.EINTERNAL, "no rows for bad")
	if n, err := s.MessageCount(context.Background(), "bad"); err != nil || n != 0 {
		t.Errorf("session bad holds %d rows (%v), want 0", n, err)
	}
}

// TestUnknownSessionFailsAlone: two appends of a group commit name
// sessions that do not exist. They fail, naming their session; the 98
// batched with them commit.
func TestUnknownSessionFailsAlone(t *testing.T) {
	s, url := batchStore(t)
	ms := hundred(20, "nosuch")
	ms[70].SessionID = "nosuch2"
	errs := appendTogether(t, s, url, ms)
	for _, i := range []int{20, 70} {
		if sessiondb.ErrorCode(errs[i]) != sessiondb.EINVALID || !strings.Contains(errs[i].Error(), ms[i].SessionID+`" does not exist`) {
			t.Errorf("append %d to %s: %v, want invalid naming the session", i, ms[i].SessionID, errs[i])
		}
	}
	for i, err := range errs {
		if err != nil && i != 20 && i != 70 {
			t.Errorf("append %d to good: %v", i, err)
		}
	}
	sess, err := s.GetSession(context.Background(), "good")
	if err != nil || sess.MessageCount != 98 {
		t.Errorf("session good: %+v, %v; want message_count 98", sess, err)
	}
	if n, err := s.MessageCount(context.Background(), ""); err != nil || n != 98 {
		t.Errorf("%d messages stored (%v), want 98", n, err)
	}
}

// TestRefusedSharedStatementFailsOneAppend: the server refuses a statement
// the whole batch shares (the counters' update, through a trigger that
// refuses session bad's). Each append is then written alone: the one to
// bad fails, the 99 others commit.
func TestRefusedSharedStatementFailsOneAppend(t *testing.T) {
	s, url := batchStore(t)
	pgtest.Exec(t, url, `CREATE FUNCTION freeze_bad() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = 'bad' THEN RAISE EXCEPTION 'session bad is frozen'; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER freeze_bad BEFORE UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION freeze_bad()`)
	ms := hundred(99, "bad")
	checkBatch(t, s, ms, appendTogether(t, s, url, ms), 99, sessiondb.EINTERNAL, "session bad is frozen")
	if n, err := s.MessageCount(context.Background(), "bad"); err != nil || n != 0 {
		t.Errorf("session bad holds %d rows (%v), want 0", n, err)
	}
}

// TestNotifyOfALongID: the notification of an append is bounded whatever
// the session id's length, and wakes that session's waiters. The append
// goes to the appender directly, past the id limit the API keeps, as a
// store written before the limit holds such ids.
func TestNotifyOfALongID(t *testing.T) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	long := strings.Repeat("y", 9000)
	pgtest.Exec(t, url, "INSERT INTO sessions (id, source, started_at) VALUES ($1, 'cli', 1773566677)", long)
	woke := make(chan int64, 1)
	go func() {
		id, err := s.WaitForMessages(ctx, long, 0)
		if err != nil {
			t.Errorf("WaitForMessages: %v", err)
		}
		woke <- id
	}()
	// The waiter is listening once its session has a waiter registered.
	for {
		n := waiterCount(s)
		if n == 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	text := "hello"
	id, err := s.app.append(ctx, &appendReq{sessionID: long, args: []any{"user", &text, nil, nil, nil, nil, s.epochNow(), nil, nil, nil, nil, nil}})
	if err != nil {
		t.Fatalf("append to a %d-byte id: %v", len(long), err)
	}
	select {
	case got := <-woke:
		if got != id {
			t.Errorf("the waiter woke with message %d, want %d", got, id)
		}
	case <-ctx.Done():
		t.Fatal("the waiter of the long id was never woken")
	}
}

// TestNotifyFromAnOlderProcess: a process of an older version sharing the
// schema announces its appends with the raw session id; the waiters of
// that session still wake.
func TestNotifyFromAnOlderProcess(t *testing.T) {
	s, url := batchStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	woke := make(chan error, 1)
	go func() {
		_, err := s.WaitForMessages(ctx, "good", 0)
		woke <- err
	}()
	for {
		n := waiterCount(s)
		if n == 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	pgtest.Exec(t, url, `INSERT INTO messages (session_id, role, content, "timestamp") VALUES ('good', 'user', 'old', 1773566678);
SELECT pg_notify('`+s.channel()+`', 'good')`)
	if err := <-woke; err != nil {
		t.Fatalf("the waiter was not woken by the raw id: %v", err)
	}
}

// TestAppendCommitsBeforeItNotifies: the transaction that writes an
// append's row (a lone append, and a group commit of several) notifies no
// one; the notification is a statement of its own, sent behind it, whose
// transaction does not wait for a WAL flush. PostgreSQL holds a
// cluster-wide lock through the commit of every transaction that
// notifies, so a NOTIFY inside the row's transaction made the appends of
// all processes commit one after another, each through its own flush.
// The waiters still wake (TestNotifyOfALongID and the conformance suite's
// waiter cases).
func TestAppendCommitsBeforeItNotifies(t *testing.T) {
	s, rec, schemaURL := openTraced(t, 4)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	// A listener is registered (a connection's own row), and an append
	// has seen it, so the appends below carry their notification.
	listener, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, registerListenerSQL); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "b", Role: "user", Content: strPtr("first seen")}); err != nil {
		t.Fatal(err)
	}
	rec.start()
	if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: strPtr("alone")}); err != nil {
		t.Fatal(err)
	}
	// Two appends in one group commit, straight to the batch writer.
	text := "together"
	batch := []*appendReq{
		{sessionID: "a", args: []any{"user", &text, nil, nil, nil, nil, s.epochNow(), nil, nil, nil, nil, nil}, done: make(chan struct{})},
		{sessionID: "b", args: []any{"user", &text, nil, nil, nil, nil, s.epochNow(), nil, nil, nil, nil, nil}, done: make(chan struct{})},
	}
	s.app.run(batch)
	for _, r := range batch {
		if r.err != nil || r.id == 0 {
			t.Fatalf("batched append to %s: id %d, %v", r.sessionID, r.id, r.err)
		}
	}
	got := rec.stop()
	inserts, notifies := 0, 0
	for _, q := range got {
		writesRow := strings.Contains(q.sql, "INSERT INTO messages")
		notifying := strings.Contains(q.sql, "pg_notify")
		if writesRow {
			inserts++
		}
		if writesRow && notifying {
			t.Errorf("the statement writing the row also notifies:\n%s", q.sql)
		}
		if notifying && !strings.Contains(q.sql, "set_config('synchronous_commit', 'off', true)") {
			t.Errorf("the notification waits for a WAL flush:\n%s", q.sql)
		}
	}
	for _, q := range got {
		if strings.Contains(q.sql, "pg_notify") {
			notifies++
		}
	}
	if inserts != 3 || notifies != 2 {
		t.Errorf("%d statements wrote rows and %d notified; want 3 rows (one alone, two batched) and 2 notifications", inserts, notifies)
	}
	n, err := s.MessageCount(ctx, "")
	if err != nil || n != 4 {
		t.Errorf("MessageCount = %d, %v; want 4", n, err)
	}
}

// holdGoodRow locks the session "good" on a connection of its own, in a
// transaction the caller commits to let the appends that wait on it go;
// the connection closes with the test.
func holdGoodRow(t *testing.T, ctx context.Context, url string) pgx.Tx {
	t.Helper()
	lock, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close(context.Background()) })
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM sessions WHERE id = 'good' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	return tx
}
