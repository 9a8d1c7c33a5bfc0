package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// Fixtures are built in test code from the spec's DDL, the way Hermes at
// each schema version would have left the file.

// droppedAt lists the columns each migration step added: a file at version
// v lacks the columns of steps v+1..6.
var droppedAt = map[int][]string{
	2: {"finish_reason"},
	3: {"title"},
	5: {"cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "billing_provider", "billing_base_url",
		"billing_mode", "estimated_cost_usd", "actual_cost_usd", "cost_status", "cost_source", "pricing_version"},
	6: {"reasoning", "reasoning_details", "codex_reasoning_items"},
}

// ddlAt returns the schema a Hermes at version v created (v1..v6).
func ddlAt(v int, withFTS bool) string {
	drop := map[string]bool{}
	for step, cols := range droppedAt {
		if step > v {
			for _, c := range cols {
				drop[c] = true
			}
		}
	}
	var lines []string
	for _, l := range strings.Split(schemaTables, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && drop[f[0]] {
			continue
		}
		lines = append(lines, l)
	}
	ddl := strings.Join(lines, "\n")
	ddl = strings.ReplaceAll(ddl, ",\n);", "\n);")
	if v >= 4 {
		ddl += "\n" + schemaTitleIndex
	}
	if withFTS {
		ddl += "\n" + schemaFTS
	}
	return ddl
}

// buildFixture writes a Hermes file at version v with two sessions (one
// titled) and three messages, and returns its path.
func buildFixture(t testing.TB, v int, withFTS bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.db", v))
	db := sqlitetest.Open(t, path)
	sqlitetest.ExecAll(t, db, ddlAt(v, withFTS), fmt.Sprintf("INSERT INTO schema_version (version) VALUES (%d)", v),
		"INSERT INTO sessions (id, source, started_at) VALUES ('old1', 'cli', 1000), ('old2', 'telegram', 2000)",
		"INSERT INTO messages (session_id, role, content, timestamp) VALUES ('old1', 'user', 'deploy the kubernetes cluster', 1001), ('old1', 'assistant', 'done deploying', 1002), ('old2', 'user', 'weather today', 2001)")
	if v >= 3 {
		sqlitetest.ExecAll(t, db, "UPDATE sessions SET title = 'first' WHERE id = 'old1'")
	}
	db.Close()
	return path
}

// shape is what must match between a migrated file and a fresh one:
// columns (name, type, not null, default, pk) of each table by name, and
// the SQL of every index and trigger.
type shape struct {
	Columns map[string][]string
	Objects map[string]string
	Version int
}

func readShape(t testing.TB, path string) shape {
	t.Helper()
	db := sqlitetest.Open(t, path)
	defer db.Close()
	ctx := context.Background()
	sh := shape{Columns: map[string][]string{}, Objects: map[string]string{}}
	for _, tbl := range []string{"schema_version", "sessions", "messages"} {
		err := sqlitedb.Each(ctx, db, "SELECT name, type, \"notnull\", COALESCE(dflt_value, ''), pk FROM pragma_table_info(?)", []any{tbl}, func(r sqlitedb.Row) error {
			var name, typ, dflt string
			var nn, pk int
			if err := r.Scan(&name, &typ, &nn, &dflt, &pk); err != nil {
				return err
			}
			sh.Columns[tbl] = append(sh.Columns[tbl], fmt.Sprintf("%s %s nn=%d dflt=%s pk=%d", name, typ, nn, dflt, pk))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(sh.Columns[tbl])
	}
	err := sqlitedb.Each(ctx, db, "SELECT type, name, COALESCE(sql, '') FROM sqlite_master WHERE type IN ('index', 'trigger') OR name = 'messages_fts'", nil, func(r sqlitedb.Row) error {
		var typ, name, s string
		if err := r.Scan(&typ, &name, &s); err != nil {
			return err
		}
		sh.Objects[typ+" "+name] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT version FROM schema_version").Scan(&sh.Version); err != nil {
		t.Fatal(err)
	}
	return sh
}

// masterSQL returns every row of sqlite_master, to prove a file's schema
// did not change.
func masterSQL(t testing.TB, path string) []string {
	t.Helper()
	db := sqlitetest.Open(t, path)
	defer db.Close()
	out, err := sqlitedb.Append(context.Background(), db, "SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master ORDER BY type, name", nil, nil, sqlitedb.Value[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameStrings(a, b []string) bool { return reflect.DeepEqual(a, b) }

// buildNewer writes a file as a newer Hermes (version 21) would: the v6
// schema plus columns and tables v6 does not know. Rewound rows are
// active=0 AND compacted=0; prompts are kept in system_prompts by hash.
// The extra statements run last, to add what one test needs.
func buildNewer(t testing.TB, dropColumn string, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v21.db")
	db := sqlitetest.Open(t, path)
	ddl := ddlAt(6, true)
	if dropColumn != "" {
		ddl = strings.Replace(ddl, "    "+dropColumn+" TEXT,\n", "", 1)
	}
	sqlitetest.ExecAll(t, db, ddl,
		"ALTER TABLE messages ADD COLUMN active INTEGER NOT NULL DEFAULT 1",
		"ALTER TABLE messages ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0",
		"ALTER TABLE sessions ADD COLUMN api_call_count INTEGER DEFAULT 0",
		"ALTER TABLE sessions ADD COLUMN system_prompt_hash TEXT",
		"CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT)",
		"CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT NOT NULL)",
		"INSERT INTO schema_version (version) VALUES (21)",
		"INSERT INTO state_meta VALUES ('hermes.fts', 'v3')",
		"INSERT INTO system_prompts VALUES ('h1', 'You are a careful agent.')",
		"INSERT INTO sessions (id, source, started_at, ended_at, end_reason, system_prompt_hash, api_call_count) VALUES ('n1', 'cli', 1000, 1100, 'done', 'h1', 7), ('n2', 'cli', 5000, NULL, NULL, NULL, 0)",
		"INSERT INTO messages (session_id, role, content, timestamp, active, compacted) VALUES "+
			"('n1', 'user', 'deploy the zeppelin', 1001, 1, 0), "+
			"('n1', 'assistant', 'rewound zeppelin answer', 1002, 0, 0), "+
			"('n1', 'assistant', 'compacted zeppelin summary', 1003, 0, 1), "+
			"('n2', 'user', 'structured', 5001, 1, 0)")
	if _, err := db.Exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('n2', 'assistant', ?, 5002)", "\x00json:{\"parts\":[1,2]}"); err != nil {
		t.Fatal(err)
	}
	sqlitetest.ExecAll(t, db, extra...)
	db.Close()
	return path
}

var _ = context.Background
