package mailbox

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestInboundWritesShareACommit: host writes to a session's inbound.db
// that arrive while the file is being opened for one share its
// transaction and commit, each keeping its own result, and the file is
// closed again when they return.
func TestInboundWritesShareACommit(t *testing.T) {
	f := newFixture(t)
	f.enqueue(chat("m0", "first"))
	s := f.host.session(f.ref)
	var mu sync.Mutex
	var commits []int
	s.inbound.OnCommit = func(n int) { mu.Lock(); commits = append(commits, n); mu.Unlock() }

	// Holding the session's lock holds the next batch in its open.
	unlock, err := f.host.lockSession(ctxb, f.ref)
	must(t, err)
	seqs := make([]int64, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i, id := range []string{"m1", "m2", "m0", "m3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seqs[i], _, errs[i] = f.host.Enqueue(ctxb, f.ref, chat(id, "hi"))
		}()
	}
	testkit.WaitFor(t, "four enqueues queued", func() bool { return s.inbound.Queued() == 4 })
	unlock()
	wg.Wait()
	for i, err := range errs {
		must(t, err)
		if i == 2 && seqs[i] != 2 {
			t.Fatalf("the duplicate m0 got seq %d, want its existing 2", seqs[i])
		}
	}
	fresh := []int64{seqs[0], seqs[1], seqs[3]}
	slices.Sort(fresh)
	if !slices.Equal(fresh, []int64{4, 6, 8}) {
		t.Fatalf("seqs %v, want 4, 6 and 8 for the new rows", seqs)
	}
	mu.Lock()
	got := slices.Clone(commits)
	mu.Unlock()
	if !slices.Equal(got, []int{4}) {
		t.Fatalf("commits %v, want one commit of the four writes", got)
	}
	if n := f.one(InboundFile, "SELECT COUNT(*) FROM messages_in"); n != int64(4) {
		t.Fatalf("%v rows, want 4", n)
	}
	if runtime.GOOS == "linux" {
		if n := openHandles(t, filepath.Join(f.dir, InboundFile)); n != 0 {
			t.Fatalf("inbound.db is still open %d times after the writes returned", n)
		}
	}
}

// openHandles counts this process's file descriptors on path (Linux).
func openHandles(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}
