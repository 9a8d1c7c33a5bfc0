package sessiondb

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// memSession is a prepared record of memImporter.
type memSession struct{ id, parent string }

func (p memSession) SessionID() string { return p.id }

func (p memSession) DroppedFields() []DroppedField {
	return []DroppedField{{Field: "sessions.of_" + p.id, Values: 1}}
}

// memImporter is a SessionImporter over a map of session id to parent id,
// with a transaction that is a copy of it, kept only when Write's fn
// succeeds; a record whose id starts with "bad" fails to insert.
type memImporter struct {
	mu      sync.Mutex
	parents map[string]string
	writes  int
	// hook, when set, is called as a write has begun (its copy taken)
	// and as it has committed, with the write's description.
	hook func(stage, what string)
}

type memTx struct{ parents map[string]string }

func (b *memImporter) Prepare(rec map[string]any, _ ImportOptions) (memSession, error) {
	id, _ := rec["id"].(string)
	if id == "" {
		return memSession{}, Errorf(EINVALID, "id must be a non-empty string")
	}
	parent, _ := rec["parent_session_id"].(string)
	return memSession{id, parent}, nil
}

func (b *memImporter) Write(_ context.Context, what string, fn func(ImportTx[memSession]) error) error {
	b.mu.Lock()
	b.writes++
	tx := &memTx{parents: clone(b.parents)}
	b.mu.Unlock()
	b.at("begun", what)
	if err := fn(tx); err != nil {
		return err
	}
	b.mu.Lock()
	for id, parent := range tx.parents {
		if old, ok := b.parents[id]; !ok || (old == "" && parent != "") {
			b.parents[id] = parent // what this write changed
		}
	}
	b.mu.Unlock()
	b.at("committed", what)
	return nil
}

func (b *memImporter) at(stage, what string) {
	if b.hook != nil {
		b.hook(stage, what)
	}
}

func (b *memImporter) parentOf(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.parents[id]
}

func clone(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (t *memTx) Insert(p memSession) (bool, string, error) {
	if _, ok := t.parents[p.id]; ok {
		return false, "", nil
	}
	if len(p.id) >= 3 && p.id[:3] == "bad" {
		return false, "", fmt.Errorf("cannot insert %s", p.id)
	}
	if _, ok := t.parents[p.parent]; p.parent != "" && !ok {
		t.parents[p.id] = ""
		return true, p.parent, nil
	}
	t.parents[p.id] = p.parent
	return true, "", nil
}

func (t *memTx) LinkChild(parent, child string) error {
	if t.parents[child] == "" {
		t.parents[child] = parent
	}
	return nil
}

func (t *memTx) Alone(id string, fn func(ImportTx[memSession]) error) (failed, fatal error) {
	sub := &memTx{parents: clone(t.parents)}
	if err := fn(sub); err != nil {
		return Wrap(EINVALID, err, "import session %s", id), nil
	}
	t.parents = sub.parents
	return nil, nil
}

func rec(id, parent string) map[string]any {
	return map[string]any{"id": id, "parent_session_id": parent}
}

// TestImportLinks holds the import sequence both backends share: a child
// imported before its parent is linked when the parent comes, through a
// later import or later in the same batch; a taken id is skipped; a batch
// keeps the sessions before its first failure and reports them; a failed
// import changes no links; a record that fails to prepare stops the batch
// after the ones before it.
func TestImportLinks(t *testing.T) {
	ctx := context.Background()
	var links ImportLinks
	b := &memImporter{parents: map[string]string{}}

	if ok, err := ImportOne(ctx, &links, b, rec("child", "root"), ImportOptions{}); !ok.Imported || err != nil {
		t.Fatalf("child first: %v %v", ok, err)
	}
	if ok, err := ImportOne(ctx, &links, b, rec("child", "root"), ImportOptions{}); ok.Imported || err != nil {
		t.Errorf("the same id again: %v %v, want skipped", ok, err)
	}
	if ok, err := ImportOne(ctx, &links, b, rec("bad1", ""), ImportOptions{}); ok.Imported || err == nil {
		t.Errorf("failing insert: %v %v, want an error", ok, err)
	}
	if ok, err := ImportOne(ctx, &links, b, rec("root", ""), ImportOptions{}); !ok.Imported || err != nil {
		t.Fatalf("root: %v %v", ok, err)
	}
	if b.parents["child"] != "root" {
		t.Errorf("child's parent after root's import = %q, want root", b.parents["child"])
	}

	// In one batch: a child, its parent, a taken id, then a failure; the
	// records after the failure are not imported.
	results, err := ImportBatch(ctx, &links, b, []map[string]any{
		rec("c2", "p2"), rec("p2", ""), rec("root", ""), rec("c3", "p3"), rec("bad2", ""), rec("p3", ""),
	}, ImportOptions{})
	// What each imported record's store dropped comes with it; a skipped
	// one reports nothing.
	drop := func(id string) []DroppedField { return memSession{id: id}.DroppedFields() }
	want := []ImportResult{{true, drop("c2")}, {true, drop("p2")}, {}, {true, drop("c3")}}
	if !reflect.DeepEqual(results, want) || ErrorCode(err) != EINVALID {
		t.Fatalf("batch: %+v, err %v; want %+v", results, err, want)
	}
	if b.parents["c2"] != "p2" || b.parents["c3"] != "" {
		t.Errorf("after the batch: %v", b.parents)
	}
	if _, ok := b.parents["p3"]; ok {
		t.Errorf("p3, after the failing record, was imported")
	}
	// c3 still waits for p3, across the batch's commit.
	if _, err := ImportBatch(ctx, &links, b, []map[string]any{rec("p3", "")}, ImportOptions{}); err != nil || b.parents["c3"] != "p3" {
		t.Errorf("c3's parent once p3 is imported = %q (%v)", b.parents["c3"], err)
	}

	// A record that fails to prepare: the ones before it are imported,
	// and its error comes back after them.
	writes := b.writes
	results, err = ImportBatch(ctx, &links, b, []map[string]any{rec("d1", ""), {"id": ""}, rec("d2", "")}, ImportOptions{})
	if len(results) != 1 || !results[0].Imported || ErrorCode(err) != EINVALID || b.writes != writes+1 {
		t.Errorf("prepare failure: %+v, err %v, %d writes", results, err, b.writes-writes)
	}
	if _, err := ImportBatch(ctx, &links, b, []map[string]any{{"id": ""}}, ImportOptions{}); err == nil || b.writes != writes+1 {
		t.Errorf("nothing prepared: err %v, %d writes, want the error and no write", err, b.writes-writes-1)
	}
}

// TestImportLinksAtOnce: imports through one ImportLinks may run at once,
// and a child is linked to its parent whichever commits and records its
// links first. Each case holds one import at a point of its write while
// the other runs; an import that left a link to the other makes it in a
// write of its own.
func TestImportLinksAtOnce(t *testing.T) {
	ctx := context.Background()
	type hold struct{ stage, what string } // where the first import waits
	for _, tc := range []struct {
		name        string
		first, then map[string]any
		hold        hold
	}{
		// The child commits, then the parent's import looks for waiting
		// children before the child's import has recorded it.
		{"child committed, not recorded", rec("c", "p"), rec("p", ""), hold{"committed", "import session c"}},
		// The parent commits and has not recorded itself when the child,
		// which did not see it, commits and records that it waits.
		{"parent committed, not recorded", rec("p", ""), rec("c", "p"), hold{"committed", "import session p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var links ImportLinks
			b := &memImporter{parents: map[string]string{}}
			// In the second case the child's write must not see the
			// parent: it begins first and waits until the parent commits.
			childFirst := tc.first["id"] == "p"
			reached, release := make(chan struct{}), make(chan struct{})
			childBegun, parentCommitted := make(chan struct{}), make(chan struct{})
			b.hook = func(stage, what string) {
				switch {
				case stage == tc.hold.stage && what == tc.hold.what:
					close(reached)
					<-release
				case childFirst && stage == "begun" && what == "import session c":
					close(childBegun)
					<-parentCommitted
				}
			}
			done := make(chan error, 1)
			go func() {
				if childFirst {
					<-childBegun
				}
				_, err := ImportOne(ctx, &links, b, tc.first, ImportOptions{})
				done <- err
			}()
			thenDone := make(chan error, 1)
			if childFirst {
				go func() {
					_, err := ImportOne(ctx, &links, b, tc.then, ImportOptions{})
					thenDone <- err
				}()
				<-reached
				close(parentCommitted)
				if err := <-thenDone; err != nil {
					t.Fatal(err)
				}
			} else {
				<-reached
				if _, err := ImportOne(ctx, &links, b, tc.then, ImportOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if got := b.parentOf("c"); got != "" {
				t.Fatalf("c linked to %q before the held import recorded its links; the case did not hold", got)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := b.parentOf("c"); got != "p" {
				t.Errorf("c's parent = %q, want p", got)
			}
		})
	}
}

// forgetfulImporter writes each batch into a transaction of its own that
// nothing keeps: what an ImportLinks holds is all an import leaves.
type forgetfulImporter struct{ memImporter }

func (*forgetfulImporter) Write(_ context.Context, _ string, fn func(ImportTx[memSession]) error) error {
	return fn(&memTx{parents: map[string]string{}})
}

// TestImportLinksKeepNoHistory: the links a store keeps for its imports
// hold the children waiting for a parent and what a running import may
// have missed, not every id ever imported: 100,000 sessions of 200-byte
// ids, imported a batch at a time, leave the heap as it was (within 4 MB;
// keeping their ids took 23).
func TestImportLinksKeepNoHistory(t *testing.T) {
	ctx := context.Background()
	var links ImportLinks
	b := &forgetfulImporter{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pad := strings.Repeat("x", 200)
	for i := range 1000 {
		recs := make([]map[string]any, 100)
		for j := range recs {
			recs[j] = rec(fmt.Sprintf("%s-%d-%d", pad, i, j), "")
		}
		if _, err := ImportBatch(ctx, &links, b, recs, ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
		t.Errorf("the heap grew by %d MB over 100,000 imported sessions; the links keep them", grew>>20)
	}
	runtime.KeepAlive(&links)
}
