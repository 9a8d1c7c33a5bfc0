package sqlite

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
)

// searchGuard bounds every search these tests run. The searches they cancel
// would run for minutes; one still going at the guard is a hang, reported as
// a failure, not a timing measurement.
const searchGuard = 30 * time.Second

// cpuTime is the CPU time this process has used so far.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// searchOutcome is what one search returned.
type searchOutcome struct {
	hits []sessiondb.SearchHit
	err  error
}

// searchThenCancel starts a search and cancels its context once the
// process has spent busy of CPU time on it (so the cancel lands inside
// SQLite, not before the query starts), unless the search ends first. It
// returns what the search returned, failing t if it is still running at
// searchGuard.
func searchThenCancel(t *testing.T, s *Store, query string, busy time.Duration) (searchOutcome, bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan searchOutcome, 1)
	start := cpuTime(t)
	go func() {
		hits, err := s.SearchMessages(ctx, query, sessiondb.SearchFilter{})
		done <- searchOutcome{hits, err}
	}()
	guard := time.NewTimer(searchGuard)
	defer guard.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	cancelled := false
	for {
		select {
		case out := <-done:
			return out, cancelled
		case <-guard.C:
			t.Fatalf("search %.40q still running %v after it started (cancelled: %v): a hang", query, searchGuard, cancelled)
		case <-poll.C:
			if !cancelled && cpuTime(t)-start >= busy {
				cancel()
				cancelled = true
			}
		}
	}
}

// TestSearchCancelled: a search whose ranking runs for minutes (the same
// word 400 times as a query, over 200 messages made of that word: FTS5
// spends about a third of a second on each row) returns context.Canceled
// soon after its context is cancelled, under both drivers.
func TestSearchCancelled(t *testing.T) {
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "a", "cli")
	content := strings.Repeat("a ", 500)
	for range 200 {
		mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: &content})
	}
	out, cancelled := searchThenCancel(t, s, strings.Repeat("a ", 400), 300*time.Millisecond)
	if !cancelled {
		t.Fatalf("the search ended (%d hits, %v) before it was cancelled; it should take minutes", len(out.hits), out.err)
	}
	if !errors.Is(out.err, context.Canceled) {
		t.Fatalf("cancelled search returned %d hits, error %v; want context.Canceled", len(out.hits), out.err)
	}
}

// TestSearchLargeMessage: a message in which the term occurs 200,000 times
// (1 MB) is found with FTS5's snippet rules, and the search is not held up
// by the number of occurrences: FTS5's snippet() spent minutes here
// (quadratic in the occurrences, and deaf to SQLite's interrupt), so the
// search, cancelled or not, had to end before the guard.
func TestSearchLargeMessage(t *testing.T) {
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "big", "cli")
	content := strings.Repeat("word ", 200_000)
	id := mustAppend(t, s, sessiondb.NewMessage{SessionID: "big", Role: "user", Content: &content})
	out, cancelled := searchThenCancel(t, s, "word", 5*time.Second)
	if cancelled {
		t.Fatalf("the search was still running after 5 s of CPU; it should take well under a second")
	}
	if out.err != nil || len(out.hits) != 1 || out.hits[0].ID != id {
		t.Fatalf("hits %v, err %v; want message %d", out.hits, out.err, id)
	}
	// The first window of 40 tokens, every one a match, cut after it.
	want := strings.Repeat(">>>word<<< ", 39) + ">>>word<<<..."
	if got := out.hits[0].Snippet; got != want {
		t.Errorf("snippet = %q\nwant %q", got, want)
	}
}

// TestSnippetWindowContract: the snippet of a text longer than
// fts.SnippetWindow is chosen from its first fts.SnippetWindow bytes, with FTS5's
// markers; a match only beyond them leaves the text's start, unmarked, and
// both end with the ellipsis of a cut.
func TestSnippetWindowContract(t *testing.T) {
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "c", "cli")
	filler := strings.Repeat("lorem ipsum ", fts.SnippetWindow/12+10) // past the window
	early := "alpha beta needle gamma " + filler
	late := "alpha beta gamma " + filler + " haystack"
	earlyID := mustAppend(t, s, sessiondb.NewMessage{SessionID: "c", Role: "user", Content: &early})
	lateID := mustAppend(t, s, sessiondb.NewMessage{SessionID: "c", Role: "user", Content: &late})
	ctx := context.Background()
	for _, tc := range []struct {
		query string
		id    int64
		want  string
	}{
		{"needle", earlyID, "alpha beta >>>needle<<< gamma " + strings.TrimSuffix(strings.Repeat("lorem ipsum ", 18), " ") + "..."},
		{"haystack", lateID, "alpha beta gamma " + strings.TrimSuffix(strings.Repeat("lorem ipsum ", 18), " ") + " lorem..."},
	} {
		hits, err := s.SearchMessages(ctx, tc.query, sessiondb.SearchFilter{})
		if err != nil || len(hits) != 1 || hits[0].ID != tc.id {
			t.Fatalf("search %q: hits %v, err %v; want message %d", tc.query, hits, err, tc.id)
		}
		if hits[0].Snippet != tc.want {
			t.Errorf("search %q: snippet = %q\nwant %q", tc.query, hits[0].Snippet, tc.want)
		}
	}
}
