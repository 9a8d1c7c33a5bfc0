package history

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// pgURL returns a URL of the test server whose search_path is a fresh,
// empty schema: a store location of its own.
func pgURL(t *testing.T) string {
	t.Helper()
	url := pgtest.URL(t)
	return pgtest.WithSearchPath(url, pgtest.Schema(t, url))
}

// TestPostgresLocation runs the same commands on a state.db file and on a
// postgres:// URL given to --db: the output is the same, so moving to a
// server is one flag.
func TestPostgresLocation(t *testing.T) {
	url := pgURL(t)
	file := exampleDB(t)

	r := runCLI(t, "", "--db", url, "sessions")
	if r.Code != cli.ExitNotFound || !strings.Contains(r.Stderr, "sessiondb import") {
		t.Fatalf("sessions on an empty schema: exit %d, stderr %q; want not_found with a hint to import", r.Code, r.Stderr)
	}
	mustCLI(t, "--db", url, "import", examplesFile)
	for _, args := range [][]string{
		{"--json", "sessions", "--limit", "50"},
		{"--json", "sessions", "--children", "--limit", "50"},
		{"--json", "search", "docker"},
		{"--json", "search", "deploy*"},
		{"--json", "stats"},
	} {
		onFile := comparable(t, mustCLI(t, append([]string{"--db", file}, args...)...))
		onServer := comparable(t, mustCLI(t, append([]string{"--db", url}, args...)...))
		if onFile.Stdout != onServer.Stdout {
			t.Errorf("sessiondb %s differs between a file and PostgreSQL:\nfile:     %s\npostgres: %s", strings.Join(args, " "), onFile.Stdout, onServer.Stdout)
		}
		if len(onFile.Stdout) < 10 {
			t.Errorf("sessiondb %s printed almost nothing: %q", strings.Join(args, " "), onFile.Stdout)
		}
	}

	t.Setenv("SESSIONDB_DATABASE_URL", url)
	t.Setenv("SESSIONDB_HOME", t.TempDir())
	viaEnv := mustCLI(t, "--json", "sessions", "--limit", "50")
	direct := mustCLI(t, "--db", url, "--json", "sessions", "--limit", "50")
	if viaEnv.Stdout != direct.Stdout {
		t.Errorf("SESSIONDB_DATABASE_URL did not select the server:\nenv:  %s\n--db: %s", viaEnv.Stdout, direct.Stdout)
	}
}

// comparable rewrites r's JSON for comparing backends: it drops the
// snippet of every search hit, since the backends mark matches alike but
// cut the window around them differently (FTS5's snippet() and
// PostgreSQL's ts_headline, see docs/postgres.md), and it rounds numbers
// to 12 significant digits, since sums of costs round differently in the
// last place (SQLite adds in row order, PostgreSQL exactly). It also drops
// stats' model_usage_rows, which says whether the store has Hermes' per-model
// usage table (PostgreSQL always has it, a schema-6 file does not), not
// anything of the data. Everything else must be equal.
func comparable(t *testing.T, r clitest.Result) clitest.Result {
	t.Helper()
	var v any
	r.Decode(t, &v)
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "snippet")
			delete(x, "model_usage_rows")
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case float64:
			return strconv.FormatFloat(x, 'g', 12, 64)
		}
		return v
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		t.Fatal(err)
	}
	r.Stdout = string(b)
	return r
}

// TestCopyRoundTrip copies the examples from a file to PostgreSQL and on
// to a second file: the second file's export is byte for byte the first's
// (ids, titles, lineage, usage and every message), a second copy changes
// nothing, and the checksums the copies report agree.
func TestCopyRoundTrip(t *testing.T) {
	url := pgURL(t)
	first := exampleDB(t)
	second := filepath.Join(t.TempDir(), "back.db")

	var there, again, back struct {
		Sessions, Copied, Skipped int
		Messages                  int64
		Checksum                  string
		Dropped                   []any
	}
	mustCLI(t, "--json", "copy", "--from", first, "--to", url).Decode(t, &there)
	if there.Sessions != exampleSessions || there.Copied != exampleSessions || there.Skipped != 0 || there.Messages == 0 || len(there.Checksum) != 64 {
		t.Fatalf("copy to PostgreSQL: %+v", there)
	}
	mustCLI(t, "--json", "copy", "--from", first, "--to", url).Decode(t, &again)
	if again.Copied != 0 || again.Skipped != exampleSessions || again.Checksum != there.Checksum {
		t.Errorf("second copy: %+v, want everything skipped and the same checksum", again)
	}
	mustCLI(t, "--json", "copy", "--from", url, "--to", second).Decode(t, &back)
	// PostgreSQL's newer columns hold their defaults here: a file of
	// schema 6 loses nothing of them, and no warning says otherwise.
	if back.Copied != exampleSessions || back.Checksum != there.Checksum || back.Messages != there.Messages || len(back.Dropped) != 0 || len(there.Dropped) != 0 {
		t.Errorf("copy back: %+v, want %d sessions and checksum %s", back, exampleSessions, there.Checksum)
	}
	a := mustCLI(t, "--db", first, "export")
	b := mustCLI(t, "--db", second, "export")
	if a.Stdout != b.Stdout || len(a.Stdout) < 1000 {
		t.Errorf("the export after the round trip differs from the original (%d and %d bytes)", len(a.Stdout), len(b.Stdout))
	}

	r := runCLI(t, "", "copy", "--from", first)
	if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, "--to") {
		t.Errorf("copy without --to: exit %d, %q", r.Code, r.Stderr)
	}
	// A --from that holds no store is named as --from, and nothing is made
	// at --to.
	missing, target := filepath.Join(t.TempDir(), "missing.db"), filepath.Join(t.TempDir(), "made.db")
	r = runCLI(t, "", "copy", "--from", missing, "--to", target)
	if r.Code != cli.ExitNotFound || !strings.Contains(r.Stderr, "--from "+missing) || strings.Contains(r.Stderr, "--db") {
		t.Errorf("copy from a missing file: exit %d, %q; want not found naming --from", r.Code, r.Stderr)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("copy from a missing file made %s", target)
	}
}

// TestPasswordNeverPrinted: a URL holding a password, given with --db or
// --to, is warned about once and the password appears in no output, no
// error and no report (the test server trusts every loopback connection,
// so any password opens it); from $SESSIONDB_DATABASE_URL it is not warned
// about.
func TestPasswordNeverPrinted(t *testing.T) {
	const secret = "s3cret-pw"
	withPW := func(url string) string {
		return strings.Replace(url, "postgres://postgres@", "postgres://postgres:"+secret+"@", 1)
	}
	url := withPW(pgURL(t))
	if !strings.Contains(url, secret) {
		t.Fatalf("the test server's URL %q is not postgres://postgres@...", url)
	}
	check := func(r clitest.Result, warned bool) {
		t.Helper()
		if strings.Contains(r.Stdout+r.Stderr, secret) {
			t.Errorf("the password is printed:\nstdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		}
		if n := strings.Count(r.Stderr, "holds a password"); n != map[bool]int{true: 1, false: 0}[warned] {
			t.Errorf("%d warnings, want warned=%v: %s", n, warned, r.Stderr)
		}
	}
	r := runCLI(t, "", "--db", url, "sessions")
	if r.Code != cli.ExitNotFound {
		t.Fatalf("sessions on an empty schema: exit %d, %s", r.Code, r.Stderr)
	}
	check(r, true)
	r = mustCLI(t, "--db", url, "quickstart")
	if !strings.Contains(r.Stdout, "postgres:xxxxx@") {
		t.Errorf("quickstart does not name the store with its password masked: %s", r.Stdout)
	}
	// The next commands it prints are to be run: --db without the
	// password, which they read from $PGPASSWORD or ~/.pgpass.
	if !strings.Contains(r.Stdout, "sessiondb --db 'postgres://postgres@") || !strings.Contains(r.Stdout, "leave the password out of --db") {
		t.Errorf("quickstart's next commands do not give --db without its password: %s", r.Stdout)
	}
	check(r, true)
	check(mustCLI(t, "--db", url, "--json", "quickstart"), true)
	check(mustCLI(t, "copy", "--from", exampleDB(t), "--to", withPW(pgURL(t))), true)

	t.Setenv("SESSIONDB_DATABASE_URL", url)
	t.Setenv("SESSIONDB_HOME", t.TempDir())
	check(mustCLI(t, "sessions"), false)
}

// TestImportInParallelOnPostgres: on PostgreSQL import writes two batches
// at once by default. A file of 300 sessions (six batches), whose
// continuations come before their parents and right after them, imports
// whole, each message in its session in order and each continuation under
// its parent, as the same file does one batch at a time; the report counts
// every session once.
func TestImportInParallelOnPostgres(t *testing.T) {
	const n = 300
	var ids []string
	parentOf := map[string]string{}
	for i := range n {
		id := "s" + strconv.Itoa(i)
		ids = append(ids, id)
		switch {
		case i%7 == 0 && i+60 < n:
			parentOf[id] = "s" + strconv.Itoa(i+60) // in a later batch
		case i%11 == 0 && i > 0:
			parentOf[id] = "s" + strconv.Itoa(i-1) // just before, maybe in the batch being written
		}
	}
	file := sessionsFile(t, ids, parentOf)

	shapes := map[string]string{}
	for _, jobs := range []string{"1", "2"} {
		url := pgURL(t)
		args := []string{"--db", url, "--json", "import", file}
		if jobs == "1" {
			args = append(args, "--jobs", "1")
		}
		var rep struct{ Imported, Skipped, Failed int }
		mustCLI(t, args...).Decode(t, &rep)
		if rep.Imported != n || rep.Skipped != 0 || rep.Failed != 0 {
			t.Errorf("--jobs %s: report %+v, want %d imported", jobs, rep, n)
		}
		// What each session holds, ids aside (they follow the order the
		// batches committed in).
		type exported struct {
			ID       string  `json:"id"`
			Parent   *string `json:"parent_session_id"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		byID := map[string]exported{}
		for _, line := range strings.Split(strings.TrimSpace(mustCLI(t, "--db", url, "export").Stdout), "\n") {
			var e exported
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("export line %q: %v", line, err)
			}
			byID[e.ID] = e
		}
		if len(byID) != n {
			t.Errorf("--jobs %s: %d sessions exported, want %d", jobs, len(byID), n)
		}
		var shape strings.Builder
		for i := range n {
			id := "s" + strconv.Itoa(i)
			s := byID[id]
			parent := ""
			if s.Parent != nil {
				parent = *s.Parent
			}
			if parent != parentOf[id] || len(s.Messages) != 20 {
				t.Errorf("--jobs %s: %s has parent %q and %d messages, want %q and 20", jobs, id, parent, len(s.Messages), parentOf[id])
			}
			for j, m := range s.Messages {
				if m.Content != id+" line "+strconv.Itoa(j) {
					t.Errorf("--jobs %s: %s message %d = %q", jobs, id, j, m.Content)
					break
				}
			}
			fmt.Fprintf(&shape, "%s<%s:%d;", id, parent, len(s.Messages))
		}
		shapes[jobs] = shape.String()
	}
	if shapes["1"] != shapes["2"] {
		t.Errorf("two batches at once stored another history than one at a time")
	}
	for _, jobs := range []string{"-1", "65"} {
		r := runCLI(t, "", "--db", pgURL(t), "import", file, "--jobs", jobs)
		if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, "--jobs") {
			t.Errorf("--jobs %s: exit %d, stderr %q; want invalid naming --jobs", jobs, r.Code, r.Stderr)
		}
	}
}

// TestImportSameIDInTwoBatchesOnPostgres: a session id twice in a file,
// the second in the next batch, keeps the first line's session, as one
// batch at a time does, though two batches are written at once: the first
// batch (fifty sessions of 99 messages) takes longer to prepare than the
// second (one short session), so the second, unwaited, won the id.
func TestImportSameIDInTwoBatchesOnPostgres(t *testing.T) {
	var b strings.Builder
	line := func(rec map[string]any) {
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(raw, '\n'))
	}
	for i := range 50 {
		id := "s" + strconv.Itoa(i)
		if i == 49 {
			id = "dup"
		}
		var msgs []any
		for j := range 99 {
			msgs = append(msgs, map[string]any{"role": "user", "content": id + " first " + strconv.Itoa(j), "timestamp": 2000.0 + float64(j)})
		}
		line(map[string]any{"id": id, "source": "cli", "started_at": 1000.0 + float64(i), "messages": msgs})
	}
	line(map[string]any{"id": "dup", "source": "cli", "started_at": 5.0, "messages": []any{map[string]any{"role": "user", "content": "second", "timestamp": 1.0}}})
	file := filepath.Join(t.TempDir(), "dup.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		url := pgURL(t)
		var rep struct{ Imported, Skipped, Failed int }
		mustCLI(t, "--db", url, "--json", "import", file).Decode(t, &rep)
		if rep.Imported != 50 || rep.Skipped != 1 || rep.Failed != 0 {
			t.Errorf("report %+v, want 50 imported and 1 skipped", rep)
		}
		var got struct {
			StartedAt float64 `json:"started_at"`
			Messages  []any   `json:"messages"`
		}
		mustCLI(t, "--db", url, "--json", "export", "dup").Decode(t, &got)
		if got.StartedAt != 1049 || len(got.Messages) != 99 {
			t.Fatalf("dup holds the session started at %v with %d messages, want the first line's (1049, 99)", got.StartedAt, len(got.Messages))
		}
	}
}

// TestCopyInParallelOnPostgres: copy writes two batches into PostgreSQL at
// once by default. A file of 300 sessions (six batches), whose
// continuations start right after their parents and sixty sessions on
// (so a child's batch is often written while its parent's still is),
// copies whole: every continuation under its parent, every message in
// order, the same history as one batch at a time, and the report counts
// every session once. --jobs out of bounds is refused by name.
func TestCopyInParallelOnPostgres(t *testing.T) {
	const n = 300
	var ids []string
	parentOf := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("s%03d", i)
		ids = append(ids, id)
		switch {
		case i%7 == 0 && i >= 60:
			parentOf[id] = fmt.Sprintf("s%03d", i-60) // a batch or so before
		case i%11 == 0 && i > 0:
			parentOf[id] = fmt.Sprintf("s%03d", i-1) // just before, maybe in the same batch
		}
	}
	jsonl := sessionsFile(t, ids, parentOf)
	file := filepath.Join(t.TempDir(), "from.db")
	mustCLI(t, "--db", file, "import", jsonl)
	want := mustCLI(t, "--db", file, "export").Stdout

	for _, jobs := range []string{"", "1", "3"} {
		url := pgURL(t)
		args := []string{"--json", "copy", "--from", file, "--to", url}
		if jobs != "" {
			args = append(args, "--jobs", jobs)
		}
		var rep struct{ Sessions, Copied, Skipped int }
		mustCLI(t, args...).Decode(t, &rep)
		if rep.Sessions != n || rep.Copied != n || rep.Skipped != 0 {
			t.Errorf("--jobs %q: report %+v, want %d copied", jobs, rep, n)
		}
		// Back into a file, whose export is the original's byte for byte:
		// parents, messages, their ids and order.
		back := filepath.Join(t.TempDir(), "back.db")
		mustCLI(t, "copy", "--from", url, "--to", back)
		if got := mustCLI(t, "--db", back, "export").Stdout; got != want {
			t.Errorf("--jobs %q: the history copied through PostgreSQL differs from the original (%d and %d bytes)", jobs, len(got), len(want))
		}
		// And the parents as the input gave them.
		var parents []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent_session_id"`
		}
		mustCLI(t, "--db", url, "--json", "sessions", "--children", "--limit", "1000").Decode(t, &parents)
		linked := 0
		for _, p := range parents {
			got := ""
			if p.Parent != nil {
				got = *p.Parent
				linked++
			}
			if got != parentOf[p.ID] {
				t.Errorf("--jobs %q: %s has parent %q, want %q", jobs, p.ID, got, parentOf[p.ID])
			}
		}
		if len(parents) != n || linked != len(parentOf) {
			t.Errorf("--jobs %q: %d sessions listed, %d linked; want %d and %d", jobs, len(parents), linked, n, len(parentOf))
		}
	}
	for _, jobs := range []string{"-1", "65"} {
		r := runCLI(t, "", "copy", "--from", file, "--to", pgURL(t), "--jobs", jobs)
		if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, "--jobs") {
			t.Errorf("--jobs %s: exit %d, stderr %q; want invalid naming --jobs", jobs, r.Code, r.Stderr)
		}
	}
}

// sessionsFile writes an import file of sessions ids, in that order, each
// under the parent parentOf names and holding 20 messages whose content
// names the session and the line.
func sessionsFile(t *testing.T, ids []string, parentOf map[string]string) string {
	t.Helper()
	var b strings.Builder
	for i, id := range ids {
		rec := map[string]any{"id": id, "source": "cli", "started_at": 1000.0 + float64(i)}
		if p := parentOf[id]; p != "" {
			rec["parent_session_id"] = p
		}
		var msgs []any
		for j := range 20 {
			msgs = append(msgs, map[string]any{"role": "user", "content": id + " line " + strconv.Itoa(j), "timestamp": 2000.0 + float64(i) + float64(j)/100})
		}
		rec["messages"] = msgs
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	file := filepath.Join(t.TempDir(), "sessions.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
