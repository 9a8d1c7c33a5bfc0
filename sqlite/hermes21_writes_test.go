package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// Hermes' own writes on the schema-21 fixture (reads/writes.json:
// delete_session, clear_messages, prune_sessions, set_session_archived,
// each on a fresh copy of state.db) against ours on a copy each: the same
// result, the same sessions left with the same parents and archived flags,
// the same messages and usage rows by session, and a file that both this
// SQLite and Python's SQLite 3.40 (the one Hermes wrote the fixture with)
// find sound.

// hermesWrite is one case of reads/writes.json.
type hermesWrite struct {
	Name     string         `json:"name"`
	Call     string         `json:"call"`
	Args     map[string]any `json:"args"`
	Result   any            `json:"result"`
	Sessions map[string]struct {
		Parent   *string     `json:"parent_session_id"`
		Archived json.Number `json:"archived"`
	} `json:"sessions"`
	Messages       map[string]json.Number `json:"messages"`
	Usage          map[string]json.Number `json:"session_model_usage"`
	IntegrityCheck []string               `json:"integrity_check"`
	FTSCheck       map[string]string      `json:"fts_integrity_check"`
}

// oldFTSCheck is Python's SQLite's account of the file at path: its
// integrity_check, then FTS5's own integrity-check of Hermes' two
// full-text tables, in writes.json's form.
func oldFTSCheck(t *testing.T, path string) (integrity []string, fts map[string]string) {
	t.Helper()
	out := oldSQLite(t, path, `import json
r = {"integrity_check": [x[0] for x in c.execute("PRAGMA integrity_check")], "fts": {}}
for t in ("messages_fts", "messages_fts_trigram"):
    try:
        c.execute(f"INSERT INTO {t}({t}) VALUES('integrity-check')")
        r["fts"][t] = "ok"
    except sqlite3.DatabaseError as e:
        r["fts"][t] = str(e)
print(json.dumps(r))`)
	var r struct {
		Integrity []string          `json:"integrity_check"`
		FTS       map[string]string `json:"fts"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("python3's check: %v\n%s", err, out)
	}
	return r.Integrity, r.FTS
}

// ourCheck fails t unless this SQLite finds the store sound: no damage in
// integrity_check (version skew explained is not damage), and messages_fts
// matching the messages.
func ourCheck(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	lines, err := s.IntegrityCheck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0] != "ok" {
		damage, _, err := s.ExplainIntegrity(ctx, lines)
		if err != nil || len(damage) > 0 {
			t.Errorf("our integrity check: damage %q (%v)", damage, err)
		}
	}
	if err := s.FTSIntegrityCheck(ctx); err != nil {
		t.Errorf("our full-text check: %v", err)
	}
}

func TestHermes21Writes(t *testing.T) {
	var cases []hermesWrite
	hermesReads(t, "writes.json", &cases)
	if len(cases) == 0 {
		t.Fatal("reads/writes.json holds no case")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ctx := context.Background()
			path := hermes21Copy(t)
			requireOldSQLite(t, path)
			// Hermes' clock in make_fixture.py when the call ran: its
			// prune's cutoff is that time less the days.
			now := time.Unix(1767830401+86400, 0)
			s := openTestStore(t, path, Options{Now: func() time.Time { return now }})
			id, _ := c.Args["session_id"].(string)
			var got any
			var err error
			switch c.Call {
			case "delete_session":
				var ids []string
				ids, err = s.DeleteSession(ctx, id)
				got = len(ids) > 0
			case "clear_messages":
				err = s.ClearMessages(ctx, id)
			case "prune_sessions":
				var n int
				n, err = s.PruneSessions(ctx, 1, c.Args["source"].(string))
				got = json.Number(fmt.Sprint(n))
			case "set_session_archived":
				var n int64
				n, err = s.SetSessionArchived(ctx, id, c.Args["archived"].(bool))
				got = n > 0
			default:
				t.Fatalf("no call of ours for Hermes' %s", c.Call)
			}
			if err != nil {
				t.Fatalf("%s(%v): %v", c.Call, c.Args, err)
			}
			if !reflect.DeepEqual(got, c.Result) && !(c.Result == nil && got == nil) {
				t.Errorf("%s(%v) = %#v, Hermes' returned %#v", c.Call, c.Args, got, c.Result)
			}
			rows := fileRows(t, path, "SELECT id, parent_session_id, archived FROM sessions ORDER BY id")
			if len(rows) != len(c.Sessions) {
				t.Errorf("%d sessions left, Hermes left %d", len(rows), len(c.Sessions))
			}
			for _, r := range rows {
				sid := r["id"].(string)
				w, ok := c.Sessions[sid]
				if !ok {
					t.Errorf("session %s left; Hermes deleted it", sid)
					continue
				}
				parent, _ := r["parent_session_id"].(string)
				if (w.Parent == nil) != (r["parent_session_id"] == nil) || w.Parent != nil && *w.Parent != parent {
					t.Errorf("%s: parent %v, Hermes' %v", sid, r["parent_session_id"], short(w.Parent, true))
				}
				if fmt.Sprint(r["archived"]) != w.Archived.String() {
					t.Errorf("%s: archived %v, Hermes' %s", sid, r["archived"], w.Archived)
				}
			}
			for _, q := range []struct {
				what string
				sql  string
				want map[string]json.Number
			}{
				{"messages", "SELECT session_id, count(*) AS n FROM messages GROUP BY session_id", c.Messages},
				{"usage rows", "SELECT session_id, count(*) AS n FROM session_model_usage GROUP BY session_id", c.Usage},
			} {
				have := map[string]json.Number{}
				for _, r := range fileRows(t, path, q.sql) {
					have[r["session_id"].(string)] = json.Number(fmt.Sprint(r["n"]))
				}
				if !reflect.DeepEqual(have, q.want) {
					t.Errorf("%s by session %v, Hermes left %v", q.what, have, q.want)
				}
			}
			ourCheck(t, s)
			s.Close()
			integrity, fts := oldFTSCheck(t, path)
			if !reflect.DeepEqual(integrity, c.IntegrityCheck) || !reflect.DeepEqual(fts, c.FTSCheck) {
				t.Errorf("SQLite 3.40 after our %s: integrity_check %q, FTS5 %v; after Hermes' own: %q, %v",
					c.Call, integrity, fts, c.IntegrityCheck, c.FTSCheck)
			}
		})
	}
}

// TestHermes21DeleteOfRowsANewerSQLiteIndexed: multimodal rows that an
// SQLite of 3.49.2 or later indexed in Hermes' trigram index (rebuilt
// here by this SQLite, as Hermes on a newer Python would have written
// them) are deleted as exactly: afterwards this SQLite finds the index
// whole, and search still finds the other sessions' text. (Each check on
// a connection of its own: a pooled connection that ran integrity_check
// before another connection's write can report FTS5 checksums from
// before it.)
func TestHermes21DeleteOfRowsANewerSQLiteIndexed(t *testing.T) {
	ctx := context.Background()
	path := hermes21Copy(t)
	sqlitetest.ExecFile(t, path, "INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES('rebuild')")
	if got := sqlitetest.QueryValue(t, path, "PRAGMA integrity_check"); got != "ok" {
		t.Fatalf("after the rebuild by this SQLite: %v", got)
	}
	s := openTestStore(t, path, Options{})
	if _, err := s.DeleteSession(ctx, "h21-multimodal"); err != nil {
		t.Fatal(err)
	}
	if got := sqlitetest.QueryValue(t, path, "PRAGMA integrity_check"); got != "ok" {
		t.Errorf("after our delete: %v", got)
	}
	hits, err := s.SearchMessages(ctx, "大别山", sessiondb.SearchFilter{})
	if err != nil || len(hits) == 0 {
		t.Errorf("CJK search after the delete: %v, %v", hits, err)
	}
}
