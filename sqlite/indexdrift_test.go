package sqlite

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// A read index made by an older sessiondb under another definition (the
// branch marker's index before it took in escaped keys) is replaced by the
// next writable open; a read-only open that cannot replace it lists by
// Hermes' walk instead of naming an index that would leave rows out.
func TestFormerReadIndexIsReplaced(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/state.db"
	s := openTestStore(t, path, Options{})
	for _, rec := range []map[string]any{
		{"id": "p", "source": "cli", "started_at": 1000.0},
		{"id": "b", "source": "cli", "started_at": 1001.0, "parent_session_id": "p", "model_config": `{"\u005fbranched_from": "p"}`},
	} {
		if r, err := s.ImportSession(ctx, rec, sessiondb.ImportOptions{}); err != nil || !r.Imported {
			t.Fatal(r, err)
		}
	}
	s.Close()
	const former = "CREATE INDEX sessiondb_sessions_branch_marked ON sessions(started_at DESC, id DESC) WHERE parent_session_id IS NOT NULL AND instr(model_config, '_branched_from') > 0"
	sqlitetest.ExecFile(t, path, "DROP INDEX sessiondb_sessions_branch_marked; "+former)
	indexSQL := func() string {
		var q string
		ro := openTestStore(t, path, Options{ReadOnly: true})
		if err := ro.db.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE name = 'sessiondb_sessions_branch_marked'").Scan(&q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	list := func(s *Store) []string {
		page, err := s.ListSessions(ctx, sessiondb.SessionQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range page.Sessions {
			ids = append(ids, r.ID)
		}
		return ids
	}
	want := []string{"b", "p"}
	if got := list(openTestStore(t, path, Options{ReadOnly: true})); !reflect.DeepEqual(got, want) {
		t.Errorf("read-only, former index: listed %v, want %v", got, want)
	}
	if got := indexSQL(); got != former {
		t.Fatalf("a read-only open changed the index: %s", got)
	}
	if got := list(openTestStore(t, path, Options{})); !reflect.DeepEqual(got, want) {
		t.Errorf("writable: listed %v, want %v", got, want)
	}
	if got := indexSQL(); got == former || !strings.Contains(got, `instr(model_config, '\') > 0`) {
		t.Errorf("after a writable open the index is %s, want the current definition", got)
	}
}
