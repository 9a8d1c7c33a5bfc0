package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// WaiterHarness reaches a backend that implements sessiondb.MessageWaiter.
type WaiterHarness struct {
	// Open returns two independent handles on one new, empty store (two
	// Opens of one file or one schema, as two processes would hold), both
	// on the clock now. The suite closes them.
	Open func(t *testing.T, now sessiondb.Clock) (a, b sessiondb.Store)
}

// hangGuard bounds a wait that should end on its own: only a broken
// notification reaches it.
const hangGuard = 30 * time.Second

// RunMessageWaiter runs the change-notification contract: a wait returns
// at once when newer messages exist, wakes on an append through the same
// handle and through another one (another process), waits for a session
// that does not exist yet, is not satisfied by another session's messages,
// and honours its context.
func RunMessageWaiter(t *testing.T, h WaiterHarness) {
	clock := testkit.NewClock(Epoch)
	a, b := h.Open(t, clock.Now)
	t.Cleanup(func() { a.Close(); b.Close() })
	wa, ok := a.(sessiondb.MessageWaiter)
	if !ok {
		t.Fatalf("%T is not a sessiondb.MessageWaiter", a)
	}
	ctx := context.Background()
	create := func(st sessiondb.Store, id string) {
		t.Helper()
		if _, err := st.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	appendTo := func(st sessiondb.Store, id string) int64 {
		t.Helper()
		text := "hello"
		n, err := st.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: &text})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		return n
	}
	type result struct {
		id  int64
		err error
	}
	wait := func(session string, after int64) <-chan result {
		out := make(chan result, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, hangGuard)
			defer cancel()
			id, err := wa.WaitForMessages(wctx, session, after)
			out <- result{id, err}
		}()
		return out
	}
	expect := func(what string, c <-chan result, want int64) {
		t.Helper()
		r := <-c
		if r.err != nil || r.id != want {
			t.Fatalf("%s: WaitForMessages = %d, %v; want %d", what, r.id, r.err, want)
		}
	}

	create(a, "s")
	first := appendTo(a, "s")
	expect("a message already there", wait("s", 0), first)

	c := wait("s", first)
	second := appendTo(a, "s")
	expect("an append through the same handle", c, second)

	c = wait("s", second)
	third := appendTo(b, "s")
	expect("an append through another handle", c, third)

	c = wait("later", 0)
	create(b, "later")
	create(b, "other")
	appendTo(b, "other")
	later := appendTo(b, "later")
	expect("a session created after the wait began, past another session's append", c, later)

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := wa.WaitForMessages(cctx, "s", third); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait returned %v, want context.Canceled", err)
	}
}
