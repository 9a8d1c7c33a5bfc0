package faults

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// doctorJSON is the part of doctor --json these tests read.
type doctorJSON struct {
	Opened        bool     `json:"opened"`
	Integrity     []string `json:"integrity_check"`
	IntegrityMore int      `json:"integrity_check_more"`
	VersionSkew   []string `json:"version_skew"`
	Problems      []string `json:"problems"`
	Advice        []string `json:"advice"`
}

func runDoctor(t *testing.T, e env, db string, flags ...string) (text result, js doctorJSON) {
	t.Helper()
	text = e.run(t, "", append([]string{"--db", db, "doctor"}, flags...)...)
	r := e.run(t, "", append([]string{"--db", db, "--json", "doctor"}, flags...)...)
	if err := json.Unmarshal([]byte(r.Stdout), &js); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r)
	}
	return text, js
}

// TestDoctorReportsDamage: on a damaged store doctor shows integrity_check's
// own lines (the first 20, and how many more) and gives them in --json,
// also when the damage keeps the file from opening as a store; a newer
// Hermes' trigram index written by an older SQLite is reported as version
// skew, not damage.
func TestDoctorReportsDamage(t *testing.T) {
	e := newEnv(t)
	good := exampleStore(t, e)
	write := func(t *testing.T, b []byte) string {
		db := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(db, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return db
	}

	t.Run("a damaged index", func(t *testing.T) {
		db := write(t, good)
		root := sqlitetest.QueryFile(t, db, "SELECT rootpage FROM sqlite_master WHERE name = 'idx_messages_session'")[0][0].(int64)
		b := append([]byte(nil), good...)
		const page = 4096
		for i := int(root-1)*page + page/2; i < int(root)*page-8; i++ {
			b[i] = byte(i * 13)
		}
		db = write(t, b)
		text, js := runDoctor(t, e, db)
		if text.Code != 1 || !strings.Contains(text.Stdout, "lines from integrity_check") || !strings.Contains(text.Stdout, "Tree ") {
			t.Errorf("doctor: %s\nwant exit 1 and integrity_check's lines", text)
		}
		if !js.Opened || len(js.Integrity) != 20 || js.IntegrityMore == 0 || !strings.HasPrefix(js.Integrity[1], "Tree ") {
			t.Errorf("--json: %d lines (+%d more): %q; want the first 20 and a count of the rest", len(js.Integrity), js.IntegrityMore, js.Integrity)
		}
		if want := "... and " + strconv.Itoa(js.IntegrityMore) + " more"; !strings.Contains(text.Stdout, want) {
			t.Errorf("doctor does not say %q:\n%s", want, text.Stdout)
		}
	})

	t.Run("a garbage first page", func(t *testing.T) {
		b := append([]byte(nil), good...)
		for i := 100; i < 4096; i++ {
			b[i] = byte(i * 7)
		}
		db := write(t, b)
		text, js := runDoctor(t, e, db)
		if text.Code != 1 || !strings.Contains(text.Stdout, "malformed") {
			t.Errorf("doctor: %s\nwant exit 1 naming the damage", text)
		}
		if js.Opened || len(js.Integrity) == 0 || !strings.Contains(js.Integrity[0], "malformed") || len(js.Problems) == 0 {
			t.Errorf("--json: %+v; want opened false and integrity_check's account", js)
		}
	})

	t.Run("version skew is not damage", func(t *testing.T) {
		db := write(t, good)
		py, err := exec.LookPath("python3")
		if err != nil {
			t.Fatal("python3 with its sqlite3 module is needed to play an older SQLite (.ci/run installs it)")
		}
		// A newer Hermes with an SQLite before 3.49.2 adds multimodal
		// messages and its inline trigram index.
		script := `import sqlite3, sys
assert tuple(map(int, sqlite3.sqlite_version.split('.'))) < (3, 49, 2), sqlite3.sqlite_version
c = sqlite3.connect(sys.argv[1])
mm = '\x00json:[{"type": "text", "text": "hello multimodal world"}]'
for i in range(3):
    c.execute("INSERT INTO messages(session_id, role, content, timestamp) VALUES ('` + exampleID + `', 'user', ?, 1800000000)", (mm,))
c.execute("CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(content, tokenize='trigram')")
c.execute("INSERT INTO messages_fts_trigram(rowid, content) SELECT id, content FROM messages")
c.execute("UPDATE schema_version SET version = 22")
c.commit()
`
		if out, err := exec.Command(py, "-c", script, db).CombinedOutput(); err != nil {
			t.Fatalf("python3: %v\n%s", err, out)
		}
		text, js := runDoctor(t, e, db)
		if text.Code != 0 || !strings.Contains(text.Stdout, "version skew") || strings.Contains(text.Stdout, "advice") {
			t.Errorf("doctor: %s\nwant exit 0 and the skew explained", text)
		}
		if len(js.Integrity) != 1 || js.Integrity[0] != "ok" || len(js.VersionSkew) != 1 || !strings.Contains(js.VersionSkew[0], "messages_fts_trigram") || len(js.Problems) != 0 {
			t.Errorf("--json: %+v; want integrity ok and one version skew", js)
		}
	})

	// Hermes makes its files under the usual umask (0644): a sound store
	// others may read is advice with the chmod that closes it, exit 0;
	// --strict fails on it; damage still fails, with the advice beside it.
	t.Run("a store others may read", func(t *testing.T) {
		db := write(t, good)
		if err := os.Chmod(db, 0o644); err != nil {
			t.Fatal(err)
		}
		text, js := runDoctor(t, e, db)
		if text.Code != 0 || !strings.Contains(text.Stdout, "advice: ") || !strings.Contains(text.Stdout, "chmod 600 "+db) || strings.Contains(text.Stdout, "problem") {
			t.Errorf("doctor: %s\nwant exit 0 and the chmod advised", text)
		}
		if len(js.Problems) != 0 || len(js.Advice) != 1 || !strings.Contains(js.Advice[0], "chmod 600 "+db) {
			t.Errorf("--json: %+v; want no problem and the chmod advised", js)
		}
		strict, js := runDoctor(t, e, db, "--strict")
		if strict.Code != 1 || !strings.Contains(strict.Stdout, "chmod 600 "+db) || len(js.Advice) != 1 {
			t.Errorf("doctor --strict: %s\nwant exit 1 on the advice", strict)
		}
		fi, err := os.Stat(db)
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("doctor changed the file's mode: %v %v", fi.Mode(), err)
		}
	})
	t.Run("a damaged store others may read", func(t *testing.T) {
		b := append([]byte(nil), good...)
		for i := 100; i < 4096; i++ {
			b[i] = byte(i * 7)
		}
		db := write(t, b)
		if err := os.Chmod(db, 0o644); err != nil {
			t.Fatal(err)
		}
		text, js := runDoctor(t, e, db)
		if text.Code != 1 || !strings.Contains(text.Stdout, "problem: ") || !strings.Contains(text.Stdout, "chmod 600 "+db) {
			t.Errorf("doctor: %s\nwant exit 1 for the damage, and the advice", text)
		}
		if len(js.Problems) == 0 || len(js.Advice) != 1 {
			t.Errorf("--json: %+v; want the damage and the advice", js)
		}
	})
}
