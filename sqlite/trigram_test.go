package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

func trigramIntegrity(t *testing.T, s *Store) {
	t.Helper()
	err := s.write(context.Background(), "check", func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("INSERT INTO sessiondb_fts_trigram(sessiondb_fts_trigram) VALUES('integrity-check')")
		return err
	})
	if err != nil {
		t.Errorf("trigram integrity: %v", err)
	}
}

func hitContents(t *testing.T, s *Store, q string) []string {
	t.Helper()
	hits, err := s.SearchMessages(context.Background(), q, sessiondb.SearchFilter{})
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	out := []string{}
	for _, h := range hits {
		var c string
		if err := s.db.QueryRow("SELECT content FROM messages WHERE id = ?", h.ID).Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func TestTrigramSearch(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{Trigram: true})
	if !s.trigramReady.Load() {
		t.Fatal("trigram index on a new file is not ready")
	}
	mustCreate(t, s, "a", "cli")
	mustCreate(t, s, "c", "cron")
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: str("我们在大别山项目上工作")})
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "assistant", Content: str("大别山的天气很好")})
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "tool", Content: str("工具输出大别山")})
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "c", Role: "user", Content: str("定时任务大别山")})
	cases := []struct {
		name  string
		query string
		want  []string
	}{
		{"trigram skips tool rows and cron sessions", "大别山", []string{"大别山的天气很好", "我们在大别山项目上工作"}},
		{"terms are ANDed", "大别山 天气很", []string{"大别山的天气很好"}},
		{"OR kept", "项目上 OR 天气很", []string{"大别山的天气很好", "我们在大别山项目上工作"}},
		{"short term falls back to LIKE over every row", "大别", []string{"大别山的天气很好", "定时任务大别山", "工具输出大别山", "我们在大别山项目上工作"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := hitContents(t, s, tc.query); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("hits %q; want %q", got, tc.want)
			}
		})
	}
	if _, err := s.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	trigramIntegrity(t, s)
	if got := hitContents(t, s, "大别山"); len(got) != 0 {
		t.Errorf("deleted rows still found: %q", got)
	}
}

func TestTrigramBackfill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTestStore(t, path, Options{})
	msgs := []any{}
	for i := 0; i < 12000; i++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("第%d条消息内容", i), "timestamp": float64(i)})
	}
	if r, err := s.ImportSession(ctx, map[string]any{"id": "big", "source": "cli", "started_at": 1.0, "messages": msgs}, sessiondb.ImportOptions{}); !r.Imported || err != nil {
		t.Fatal(r, err)
	}
	// Create the index by hand so nothing backfills yet, then change rows
	// inside the owed id range: the triggers must leave them alone.
	if err := s.w.Do(ctx, func(tx *sqlitedb.Tx) error { return createTrigram(tx) }); err != nil {
		t.Fatal(err)
	}
	if err := s.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("DELETE FROM messages WHERE id IN (10, 20, 30)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.ImportSession(ctx, map[string]any{"id": "gap", "source": "cli", "started_at": 2.0,
		"messages": []any{map[string]any{"id": 20.0, "role": "user", "content": "补上的消息内容", "timestamp": 3.0}}}, sessiondb.ImportOptions{}); !r.Imported || err != nil {
		t.Fatal(r, err)
	}
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "gap", Role: "user", Content: str("新的消息内容")})
	s.Close()

	s = openTestStore(t, path, Options{Trigram: true})
	done, err := s.BackfillTrigram(ctx)
	if err != nil || !done {
		t.Fatalf("backfill = %v, %v", done, err)
	}
	d, hw, err := s.trigramProgress(ctx)
	if err != nil || d != hw || hw != 12000 {
		t.Errorf("progress %d/%d, %v; want 12000/12000", d, hw, err)
	}
	trigramIntegrity(t, s)
	for q, want := range map[string]int{"第11999条": 1, "补上的消息": 1, "新的消息内容": 1, "第9条消息": 0} {
		if got := hitContents(t, s, q); len(got) != want {
			t.Errorf("%s: %d hits %q; want %d", q, len(got), got, want)
		}
	}
}

func TestTrigramMatch(t *testing.T) {
	cases := []struct {
		in   string
		want string
		ok   bool
	}{
		{"大别山", `"大别山"`, true},
		{`"大别山" 项目上`, `"大别山" "项目上"`, true},
		{"大别山 OR 天气很", `"大别山" OR "天气很"`, true},
		{"OR 大别山 AND", `"大别山"`, true},
		{"大别", "", false},
		{`a"b"c 大别山`, `"a""b""c" "大别山"`, true},
		{"AND", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := trigramMatch(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("trigramMatch(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}
