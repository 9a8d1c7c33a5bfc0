package history

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// examplesFile is the example conversations, as the README's tour uses them.
const examplesFile = "../../../../examples/conversations.jsonl"

// Facts about examples/conversations.jsonl the assertions rely on.
const (
	exampleSessions = 8
	exampleEnded    = 7 // all but the Kubernetes session
	projID          = "20260402_140511_4e81b2"
	proj2ID         = "20260402_141202_d07a13"
	dockerID        = "20260315_092437_c9a6ff"
	cronID          = "20260701_020000_e1d442"
	k8sID           = "20261006_164519_f28a0c"
)

// runCLI runs the history commands with stdin and returns the exit status
// and output.
func runCLI(t *testing.T, stdin string, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(context.Background(), clitest.Options{Stdin: strings.NewReader(stdin)}, args, Commands)
}

// cliAt runs the command line like runCLI, with the clock stopped at now,
// for what depends on the date (prune, stats --since).
func cliAt(t *testing.T, now time.Time, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(context.Background(), clitest.Options{Now: testkit.NewClock(now).Now}, args, Commands)
}

// mustCLI runs the command line and fails the test unless it exits 0.
func mustCLI(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	return clitest.Must(t, args, Commands)
}

// exampleDB returns a fresh store in a temp folder holding the examples.
func exampleDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, "--db", db, "import", examplesFile)
	return db
}

func TestImportIsIdempotent(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sub", "state.db")
	var first, second importReport
	mustCLI(t, "--db", db, "--json", "import", examplesFile).Decode(t, &first)
	mustCLI(t, "--db", db, "--json", "import", examplesFile).Decode(t, &second)
	if first.Imported != exampleSessions || first.Skipped != 0 || first.Failed != 0 {
		t.Errorf("first import: %+v, want %d imported", first, exampleSessions)
	}
	if second.Imported != 0 || second.Skipped != exampleSessions {
		t.Errorf("second import: %+v, want all %d skipped", second, exampleSessions)
	}
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("store mode %04o, want 0600", m)
	}
	di, err := os.Stat(filepath.Dir(db))
	if err != nil {
		t.Fatal(err)
	}
	if m := di.Mode().Perm(); m != 0o700 {
		t.Errorf("store folder mode %04o, want 0700", m)
	}
	text := mustCLI(t, "--db", db, "import", examplesFile)
	if !strings.Contains(text.Stdout, "imported 0 session(s), skipped 8 already present") {
		t.Errorf("text summary: %q", text.Stdout)
	}
}

// exampleLines returns the example file's lines keyed by session id.
func exampleLines(t *testing.T) (ids []string, lines map[string]string) {
	t.Helper()
	b, err := os.ReadFile(examplesFile)
	if err != nil {
		t.Fatal(err)
	}
	lines = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ ID string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
		lines[rec.ID] = sc.Text()
	}
	return ids, lines
}

func TestImportInputs(t *testing.T) {
	_, lines := exampleLines(t)
	tests := []struct {
		name       string
		input      []string
		flags      []string
		wantCode   int
		imported   int
		detached   int
		failed     int
		failLines  []int
		errorsHave []string
		present    []string
	}{
		{
			name:     "continuation before its parent is held back",
			input:    []string{lines[proj2ID], lines[projID]},
			imported: 2, present: []string{projID, proj2ID},
		},
		{
			// Both in one batch: the child's parent check commits the
			// batch holding the parent first.
			name:     "a parent before its continuation",
			input:    []string{lines[projID], lines[proj2ID], lines[dockerID]},
			imported: 3, present: []string{projID, proj2ID, dockerID},
		},
		{
			name: "a newer Hermes export with columns v6 lacks",
			input: []string{strings.Replace(strings.Replace(lines[dockerID], `{"actual_cost_usd"`, `{"api_call_count":3,"actual_cost_usd"`, 1),
				`"codex_reasoning_items":null,"content"`, `"active":1,"codex_reasoning_items":null,"content"`, 1)},
			imported: 1, present: []string{dockerID},
		},
		{
			name:     "blank lines are skipped",
			input:    []string{"", lines[dockerID], "   ", ""},
			imported: 1, present: []string{dockerID},
		},
		{
			name:     "bad lines are reported and do not stop the others",
			input:    []string{lines[dockerID], "{not json", `{"source":"cli"}`, `[1,2]`, `{"id":7}`, lines[cronID]},
			wantCode: cli.ExitInvalid, imported: 2, failed: 4, failLines: []int{2, 3, 4, 5},
			errorsHave: []string{"not a JSON object", "field id", "not a JSON object but a list", "field id"},
			present:    []string{dockerID, cronID},
		},
		{
			name: "the API's rules: titles, timestamps, JSON (issue 8)",
			input: []string{
				lines[dockerID],
				`{"id":"esc","source":"cli","started_at":1700000000,"title":"Deploy\u001b]0;PWNED\u0007\u001b[2J fix","messages":[]}`,
				`{"id":"long","source":"cli","started_at":1700000000,"title":"` + strings.Repeat("t", 1_000_000) + `","messages":[]}`,
				`{"id":"far","source":"cli","started_at":1e308,"messages":[]}`,
				`{"id":"tc","source":"cli","started_at":1700000000,"messages":[{"role":"assistant","timestamp":1700000001,"tool_calls":"notjson"}]}`,
				lines[cronID],
			},
			wantCode: cli.ExitInvalid, imported: 3, failed: 3, failLines: []int{3, 4, 5},
			errorsHave: []string{"title: Title too long (1000000 chars, max 100)", "started_at must be epoch seconds", "messages[0].tool_calls must be JSON"},
			present:    []string{dockerID, cronID, "esc"},
		},
		{
			// The first is found when its batch commits, the second when
			// it is read: the report keeps the file's order.
			name: "failures named in the file's order",
			input: []string{lines[dockerID],
				`{"id":"tc","source":"cli","started_at":1700000000,"messages":[{"role":"assistant","timestamp":1700000001,"tool_calls":"notjson"}]}`,
				"{not json", lines[cronID]},
			wantCode: cli.ExitInvalid, imported: 2, failed: 2, failLines: []int{2, 3},
			errorsHave: []string{"messages[0].tool_calls must be JSON", "not a JSON object"},
			present:    []string{dockerID, cronID},
		},
		{
			name: "values of the wrong kind are named in JSON's words, not Go's",
			input: []string{
				`{"id":"n1","source":"cli","started_at":null,"messages":[]}`,
				`{"id":"n2","source":"cli","started_at":"yesterday","messages":[]}`,
				`{"id":"n3","source":"cli","started_at":1700000000,"messages":{"role":"user"}}`,
				`{"id":"n4","source":"cli","started_at":1700000000,"messages":["hi"]}`,
				`{"id":"n5","source":"cli","started_at":1700000000,"messages":[{"role":"user","timestamp":{}}]}`,
				`{"id":"n6","source":"cli","started_at":1700000000,"messages":[],"session_model_usage":"x"}`,
				`{"id":"n7","source":"cli","started_at":1700000000,"messages":[{"role":"user","content":true,"timestamp":1700000000}]}`,
			},
			wantCode: cli.ExitInvalid, failed: 7, failLines: []int{1, 2, 3, 4, 5, 6, 7},
			errorsHave: []string{"started_at must be a number (epoch seconds), not null", "started_at must be a number (epoch seconds), not text",
				"messages must be a list, not an object", "messages[0] must be an object, not text", "messages[0].timestamp must be a number (epoch seconds), not an object",
				"import session n6: session_model_usage must be a list of objects, not text",
				"import session n7: messages[0].content must be a string, a list of parts or an object, not true or false"},
		},
		{
			name:     "a parent in neither store nor file",
			input:    []string{strings.Replace(lines[proj2ID], `"parent_session_id":"`+projID, `"parent_session_id":"nope`, 1)},
			wantCode: cli.ExitInvalid, failed: 1, failLines: []int{1},
			errorsHave: []string{`field parent_session_id: session "nope"`},
		},
		{
			// Each is told apart from a parent that is missing.
			name: "a session its own parent, and parents in a loop",
			input: []string{
				`{"id":"self","source":"cli","started_at":1700000000,"parent_session_id":"self","messages":[]}`,
				`{"id":"la","source":"cli","started_at":1700000000,"parent_session_id":"lb","messages":[]}`,
				`{"id":"lb","source":"cli","started_at":1700000000,"parent_session_id":"la","messages":[]}`,
			},
			wantCode: cli.ExitInvalid, failed: 3, failLines: []int{1, 2, 3},
			errorsHave: []string{`session "self" is the session itself`,
				`session "lb" is in the input but was not imported first: its own parents loop`,
				`session "la" is in the input but was not imported first`},
		},
		{
			// Its parent is in the file, but failed: named by its line.
			name: "a parent in the input that failed",
			input: []string{
				`{"id":"kid","source":"cli","started_at":1700000000,"parent_session_id":"bad","messages":[]}`,
				`{"id":"bad","source":"cli","started_at":1700000000,"messages":[{"role":"user","timestamp":"noon"}]}`,
			},
			wantCode: cli.ExitInvalid, failed: 2, failLines: []int{1, 2},
			errorsHave: []string{`session "bad" is in the input but failed to import (line 2)`, "messages[0].timestamp"},
		},
		{
			name:     "a parent in neither store nor file, detached",
			input:    []string{strings.Replace(lines[proj2ID], `"parent_session_id":"`+projID, `"parent_session_id":"nope`, 1)},
			flags:    []string{"--detach-orphans"},
			imported: 1, detached: 1, present: []string{proj2ID},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "state.db")
			in := filepath.Join(dir, "in.jsonl")
			args := append([]string{"--db", db, "--json", "import", in}, tc.flags...)
			if err := os.WriteFile(in, []byte(strings.Join(tc.input, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, "", args...)
			if r.Code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", r.Code, tc.wantCode, r.Stderr)
			}
			var rep importReport
			r.Decode(t, &rep)
			if rep.Imported != tc.imported || rep.Failed != tc.failed || rep.Detached != tc.detached {
				t.Errorf("report %+v, want imported %d detached %d failed %d", rep, tc.imported, tc.detached, tc.failed)
			}
			for i, want := range tc.failLines {
				if i >= len(rep.Errors) || rep.Errors[i].Line != want {
					t.Errorf("errors %+v: want line %d at %d", rep.Errors, want, i)
				}
			}
			for _, e := range rep.Errors {
				for _, goWords := range []string{"<nil>", "interface {}", "map[", "[]"} {
					if strings.Contains(e.Error, goWords) {
						t.Errorf("line %d: the error shows Go's %q: %s", e.Line, goWords, e.Error)
					}
				}
			}
			for i, want := range tc.errorsHave {
				if i >= len(rep.Errors) || !strings.Contains(rep.Errors[i].Error, want) {
					t.Errorf("error %d: %+v, want it to say %q", i, rep.Errors, want)
				}
			}
			for _, id := range tc.present {
				mustCLI(t, "--db", db, "show", id)
			}
		})
	}
}

func TestImportStdin(t *testing.T) {
	_, lines := exampleLines(t)
	db := filepath.Join(t.TempDir(), "state.db")
	r := runCLI(t, lines[dockerID]+"\n", "--db", db, "--json", "import", "-")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var rep importReport
	r.Decode(t, &rep)
	if rep.Imported != 1 {
		t.Errorf("imported %d from stdin, want 1", rep.Imported)
	}
}

// listed is the part of a `sessions --json` row the tests look at.
type listed struct {
	ID            string  `json:"id"`
	Source        string  `json:"source"`
	Title         *string `json:"title"`
	StartedAt     float64 `json:"started_at"`
	Preview       string  `json:"preview"`
	LineageRootID string  `json:"_lineage_root_id"`
	MessageCount  int64   `json:"message_count"`
}

func TestSessions(t *testing.T) {
	db := exampleDB(t)
	tests := []struct {
		name string
		args []string
		want []string // ids in order
	}{
		{"newest first, chain projected onto its root", nil,
			[]string{k8sID, "20260823_113005_6c0b95", cronID, "20260617_090003_5b2c7d", "20260509_081244_a3f9e0", proj2ID, dockerID}},
		{"children listed", []string{"--children"},
			[]string{k8sID, "20260823_113005_6c0b95", cronID, "20260617_090003_5b2c7d", "20260509_081244_a3f9e0", proj2ID, projID, dockerID}},
		{"one source", []string{"--source", "telegram"}, []string{"20260823_113005_6c0b95", "20260509_081244_a3f9e0"}},
		{"excluded sources", []string{"--exclude-source", "cli", "--exclude-source", "telegram"}, []string{cronID, "20260617_090003_5b2c7d"}},
		{"paging", []string{"--limit", "2", "--offset", "1"}, []string{"20260823_113005_6c0b95", cronID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rows []listed
			mustCLI(t, append([]string{"--db", db, "--json", "sessions"}, tc.args...)...).Decode(t, &rows)
			var got []string
			for _, r := range rows {
				got = append(got, r.ID)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("ids\n got %v\nwant %v", got, tc.want)
			}
		})
	}
	var rows []listed
	mustCLI(t, "--db", db, "--json", "sessions", "--source", "cli").Decode(t, &rows)
	for _, r := range rows {
		if r.ID == proj2ID && (r.LineageRootID != projID || r.Preview == "") {
			t.Errorf("projected row %+v: want _lineage_root_id %s and a preview", r, projID)
		}
	}
	text := mustCLI(t, "--db", db, "sessions")
	for _, want := range []string{"ID", "PREVIEW", "Fix Docker build", "docker compose build fails", "telegram"} {
		if !strings.Contains(text.Stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, text.Stdout)
		}
	}
}

func TestShow(t *testing.T) {
	db := exampleDB(t)
	type shown struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
		Messages []struct {
			ID   int64  `json:"id"`
			Role string `json:"role"`
		} `json:"messages"`
		HasEarlier bool `json:"has_earlier"`
	}
	tests := []struct {
		name    string
		args    []string
		wantID  string
		wantN   int
		earlier bool
	}{
		{"exact id", []string{dockerID}, dockerID, 11, false},
		{"unique prefix", []string{"20260315"}, dockerID, 11, false},
		{"title", []string{"Fix Docker build"}, dockerID, 11, false},
		{"lineage title finds the newest variant", []string{"proj"}, proj2ID, 8, false},
		{"last messages keep tool results with their call", []string{dockerID, "--last", "2"}, dockerID, 2, true},
		{"last reaching into a tool group widens it", []string{dockerID, "--last", "8"}, dockerID, 10, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s shown
			mustCLI(t, append([]string{"--db", db, "--json", "show"}, tc.args...)...).Decode(t, &s)
			if s.Session.ID != tc.wantID || len(s.Messages) != tc.wantN || s.HasEarlier != tc.earlier {
				t.Errorf("got session %s, %d messages, earlier %v; want %s, %d, %v", s.Session.ID, len(s.Messages), s.HasEarlier, tc.wantID, tc.wantN, tc.earlier)
			}
		})
	}
	text := mustCLI(t, "--db", db, "show", dockerID).Stdout
	for _, want := range []string{
		"Fix Docker build", "reasoning: The failure is inside the builder stage",
		`→ read_file {"path":"Dockerfile"}`, "tool read_file ← call_7Qm2dK1", "FROM golang:1.22-alpine",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("transcript lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b[") {
		t.Error("ANSI escapes in output that is not a terminal")
	}
}

func TestSearch(t *testing.T) {
	db := exampleDB(t)
	type hit struct {
		SessionID string `json:"session_id"`
		Role      string `json:"role"`
		Source    string `json:"source"`
		Snippet   string `json:"snippet"`
		Context   []struct {
			Role string `json:"role"`
		} `json:"context"`
	}
	tests := []struct {
		name      string
		args      []string
		sessions  []string // every hit is in one of these
		notSource string   // no hit is from this source
		min       int
	}{
		{"a word", []string{"docker"}, []string{dockerID}, "", 2},
		{"several words are one query", []string{"readiness", "probe"}, []string{k8sID}, "", 1},
		{"one source", []string{"backup", "--source", "cron"}, []string{cronID}, "", 1},
		{"excluded source", []string{"backup", "--exclude-source", "cron"}, nil, "cron", 0},
		{"role", []string{"filesystem", "--role", "tool"}, []string{cronID}, "", 1},
		{"CJK substring", []string{"大别山"}, []string{"20260823_113005_6c0b95"}, "", 1},
		{"punctuation FTS5 rejects", []string{"what's", "C++"}, nil, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out struct{ Hits []hit }
			mustCLI(t, append([]string{"--db", db, "--json", "search"}, tc.args...)...).Decode(t, &out)
			hits := out.Hits
			if len(hits) < tc.min {
				t.Fatalf("%d hits, want at least %d", len(hits), tc.min)
			}
			for _, h := range hits {
				if h.Source == tc.notSource {
					t.Errorf("hit from excluded source: %+v", h)
				}
				if tc.sessions != nil && !slices.Contains(tc.sessions, h.SessionID) {
					t.Errorf("hit in %s, want one of %v", h.SessionID, tc.sessions)
				}
				if len(h.Context) == 0 {
					t.Errorf("hit without context: %+v", h)
				}
			}
		})
	}
	text := mustCLI(t, "--db", db, "search", "docker").Stdout
	if !strings.Contains(text, dockerID+" Fix Docker build") {
		t.Errorf("hits are not headed by session id and title:\n%s", text)
	}
	if !strings.Contains(strings.ToLower(text), "[docker]") || strings.Contains(text, ">>>") || strings.Contains(text, "\x1b[") {
		t.Errorf("piped output should mark matches with plain brackets:\n%s", text)
	}
	if got := highlight("a >>>b<<< c", true); got != "a "+cli.Bold+"b"+cli.Reset+" c" {
		t.Errorf("terminal highlight: %q", got)
	}
}

// TestSearchCJKMarked: a CJK search (the substring fallback) marks its
// matches in the printed hits as a word search does, and a hit from the
// middle of a text starts with "...".
func TestSearchCJKMarked(t *testing.T) {
	db := exampleDB(t)
	text := mustCLI(t, "--db", db, "search", "大别山").Stdout
	for _, want := range []string{"> user: 下周末想去[大别山]徒步", "> tool: ...景区：主峰海拔1729米", "白马尖：[大别山]主峰"} {
		if !strings.Contains(text, want) {
			t.Errorf("search 大别山 prints no %q:\n%s", want, text)
		}
	}
	var out struct{ Hits []struct{ Snippet string } }
	mustCLI(t, "--db", db, "--json", "search", "大别山").Decode(t, &out)
	for _, h := range out.Hits {
		if !strings.Contains(h.Snippet, ">>>大别山<<<") {
			t.Errorf("--json snippet %q does not mark the match", h.Snippet)
		}
	}
}

func TestTitle(t *testing.T) {
	db := exampleDB(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string // in stdout
	}{
		{"get", []string{"title", dockerID}, 0, "Fix Docker build"},
		{"next in lineage", []string{"title", "--next", "proj"}, 0, "proj #3"},
		{"next of a fresh title", []string{"title", "--next", "brand new"}, 0, "brand new"},
		{"set", []string{"title", cronID, "  Nightly\tbackup  check "}, 0, `titled "Nightly backup check"`},
		{"set a title another session holds", []string{"title", k8sID, "Fix Docker build"}, cli.ExitConflict, ""},
		{"too long", []string{"title", k8sID, strings.Repeat("x", 101)}, cli.ExitInvalid, ""},
		{"only invisible characters", []string{"title", k8sID, "\u200b"}, cli.ExitInvalid, ""},
		{"new title and --clear", []string{"title", k8sID, "x", "--clear"}, cli.ExitInvalid, ""},
		{"unknown session", []string{"title", "nope", "x"}, cli.ExitNotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"--db", db}, tc.args...)...)
			if r.Code != tc.wantCode || !strings.Contains(r.Stdout, tc.want) {
				t.Errorf("exit %d stdout %q stderr %q; want exit %d and %q", r.Code, r.Stdout, r.Stderr, tc.wantCode, tc.want)
			}
		})
	}
	var got struct{ Title *string }
	mustCLI(t, "--db", db, "--json", "title", cronID).Decode(t, &got)
	if got.Title == nil || *got.Title != "Nightly backup check" {
		t.Errorf("title after set: %v", got.Title)
	}
	mustCLI(t, "--db", db, "title", cronID, "--clear")
	mustCLI(t, "--db", db, "--json", "title", cronID).Decode(t, &got)
	if got.Title != nil {
		t.Errorf("title after --clear: %q", *got.Title)
	}
}

func TestLineage(t *testing.T) {
	db := exampleDB(t)
	for _, ref := range []string{projID, proj2ID} {
		t.Run(ref, func(t *testing.T) {
			var root sessiondb.LineageNode
			mustCLI(t, "--db", db, "--json", "lineage", ref).Decode(t, &root)
			if root.ID != projID || deref(root.EndReason) != "compression" || len(root.Children) != 1 || root.Children[0].ID != proj2ID {
				t.Fatalf("tree %+v: want %s (compression) → %s", root, projID, proj2ID)
			}
			if root.Selected != (ref == projID) || root.Children[0].Selected != (ref == proj2ID) {
				t.Errorf("selected marks wrong for %s", ref)
			}
		})
	}
	text := mustCLI(t, "--db", db, "lineage", "proj").Stdout
	if !strings.Contains(text, "└─ * "+proj2ID) || !strings.Contains(text, "compression") {
		t.Errorf("tree text:\n%s", text)
	}
}

func TestStats(t *testing.T) {
	db := exampleDB(t)
	// The expected sums come from the example file itself.
	_, lines := exampleLines(t)
	wantIn := map[string]float64{}
	var total float64
	for _, l := range lines {
		var rec struct {
			Model       string  `json:"model"`
			InputTokens float64 `json:"input_tokens"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		wantIn[rec.Model] += rec.InputTokens
		total += rec.InputTokens
	}
	type row struct {
		Key         string  `json:"key"`
		Sessions    int64   `json:"sessions"`
		InputTokens float64 `json:"input_tokens"`
	}
	var rep struct {
		ByModel  []row `json:"by_model"`
		BySource []row `json:"by_source"`
		Top      []row `json:"top"`
	}
	mustCLI(t, "--db", db, "--json", "stats", "--top", "3").Decode(t, &rep)
	if len(rep.ByModel) != len(wantIn) {
		t.Errorf("%d models, want %d", len(rep.ByModel), len(wantIn))
	}
	for _, r := range rep.ByModel {
		if r.InputTokens != wantIn[r.Key] {
			t.Errorf("model %s: %v input tokens, want %v", r.Key, r.InputTokens, wantIn[r.Key])
		}
	}
	var sum float64
	for _, r := range rep.BySource {
		sum += r.InputTokens
	}
	if sum != total || len(rep.Top) != 3 {
		t.Errorf("by source sums to %v (want %v); top has %d rows (want 3)", sum, total, len(rep.Top))
	}
	mustCLI(t, "--db", db, "--json", "stats", "--source", "telegram", "--top", "0").Decode(t, &rep)
	if len(rep.BySource) != 1 || rep.BySource[0].Key != "telegram" || rep.BySource[0].Sessions != 2 || len(rep.Top) != 0 {
		t.Errorf("telegram stats: %+v", rep)
	}
	// At pruneNow, only the Kubernetes session (October 6) started within
	// 30 days, and none within 12 hours.
	cliAt(t, pruneNow, "--db", db, "--json", "stats", "--since", "30d").Decode(t, &rep)
	if len(rep.ByModel) != 1 || rep.ByModel[0].Key != "openai/gpt-5-codex" {
		t.Errorf("--since 30d: %+v, want only openai/gpt-5-codex", rep.ByModel)
	}
	cliAt(t, pruneNow, "--db", db, "--json", "stats", "--since", "12h").Decode(t, &rep)
	if len(rep.ByModel) != 0 {
		t.Errorf("--since 12h: %+v, want nothing", rep.ByModel)
	}
	text := mustCLI(t, "--db", db, "stats").Stdout
	for _, want := range []string{"MODEL", "SOURCE", "TOP SESSIONS", "anthropic/claude-sonnet-4.6", "telegram"} {
		if !strings.Contains(text, want) {
			t.Errorf("stats text lacks %q:\n%s", want, text)
		}
	}
}

// TestStatsText: the human report counts cost by one rule and says so,
// prints money as money, tokens as input + output by that name, and lists
// the costliest sessions by title with no count of sessions.
func TestStatsText(t *testing.T) {
	db := exampleDB(t)
	text := mustCLI(t, "--db", db, "stats").Stdout
	lines := map[string]string{} // first cell → the line
	var top []string
	inTop := false
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			inTop = false
			continue
		}
		if f[0] == "TOP" {
			inTop = true
			if strings.Contains(l, "SESSIONS  SESSIONS") || strings.Count(l, "SESSIONS") != 1 {
				t.Errorf("top sessions header counts sessions: %q", l)
			}
			continue
		}
		if inTop {
			top = append(top, l)
		}
		lines[f[0]] = l
	}
	// The Lisbon weekend was billed $0.001069 (estimate $0.001018) and the
	// backup check estimated at $0.000558: by model, gpt-4.1-mini cost
	// $0.001627, the billed figure where billed, and $0.0006 of it is an
	// estimate.
	if l := lines["openai/gpt-4.1-mini"]; !strings.Contains(l, "$0.0016  $0.0006") {
		t.Errorf("gpt-4.1-mini: %q, want cost $0.0016 of which $0.0006 estimated", l)
	}
	if !strings.Contains(text, "COST: actual where billed, else estimated") || !strings.Contains(text, "TOKENS (IN+OUT)") {
		t.Errorf("stats does not name its cost rule or its tokens:\n%s", text)
	}
	if regexp.MustCompile(`\d\.\d{5,}`).MatchString(text) {
		t.Errorf("stats prints an unformatted number:\n%s", text)
	}
	if len(top) != exampleSessions || !strings.HasPrefix(top[0], "proj ") || !regexp.MustCompile(`(?m)^Lisbon weekend +20260509_081244_a3f9e0 +8 `).MatchString(strings.Join(top, "\n")) {
		t.Errorf("top sessions not listed by title:\n%s", strings.Join(top, "\n"))
	}
}

func TestExportRoundTrip(t *testing.T) {
	db := exampleDB(t)
	one := mustCLI(t, "--db", db, "export", "Fix Docker build")
	var rec struct {
		ID       string `json:"id"`
		Messages []any  `json:"messages"`
	}
	one.Decode(t, &rec)
	if rec.ID != dockerID || len(rec.Messages) != 11 || strings.Count(one.Stdout, "\n") != 1 {
		t.Errorf("one-session export: id %s, %d messages, %d lines", rec.ID, len(rec.Messages), strings.Count(one.Stdout, "\n"))
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "all.jsonl")
	// An existing, world-readable file is made private on export.
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "--db", db, "export", "-o", out)
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("export file mode %04o, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(out)
	if n := strings.Count(string(b), "\n"); n != exampleSessions {
		t.Errorf("%d lines exported, want %d", n, exampleSessions)
	}
	// Newest first puts proj #2 before proj: the import must cope.
	db2 := filepath.Join(dir, "copy.db")
	var rep importReport
	mustCLI(t, "--db", db2, "--json", "import", out).Decode(t, &rep)
	if rep.Imported != exampleSessions {
		t.Errorf("re-import: %+v", rep)
	}
	again := mustCLI(t, "--db", db2, "export", dockerID)
	if a, b := withoutMessageIDs(t, one.Stdout), withoutMessageIDs(t, again.Stdout); a != b {
		t.Errorf("export → import → export changed the session:\n%s\n%s", a, b)
	}
	src := mustCLI(t, "--db", db, "export", "--source", "telegram").Stdout
	if n := strings.Count(src, "\n"); n != 2 {
		t.Errorf("--source telegram exported %d sessions, want 2", n)
	}
}

// pruneNow is the date the prune and stats tests run at: the examples run
// from March to October 2026.
var pruneNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestPrune(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantCount int
		remaining int // sessions left (with children)
	}{
		// Cutoff 2026-08-03: six ended sessions started before it; the
		// Daibie Shan chat (August 23) is younger, the Kubernetes one open.
		{"dry run changes nothing", []string{"--older-than", "90d", "--dry-run"}, 6, exampleSessions},
		{"ninety days", []string{"--older-than", "90d"}, 6, exampleSessions - 6},
		{"weeks", []string{"--older-than", "13w"}, 6, exampleSessions - 6},
		{"hours", []string{"--older-than", "2160h"}, 6, exampleSessions - 6},
		{"plain days", []string{"--older-than", "1"}, exampleEnded, exampleSessions - exampleEnded},
		{"nothing that old", []string{"--older-than", "1000d"}, 0, exampleSessions},
		{"one source", []string{"--older-than", "2w", "--source", "cron"}, 1, exampleSessions - 1},
		{"open sessions stay", []string{"--older-than", "1h", "--source", "cli"}, 3, exampleSessions - 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := exampleDB(t)
			var rep struct {
				Pruned     int `json:"pruned"`
				WouldPrune int `json:"would_prune"`
			}
			r := cliAt(t, pruneNow, append([]string{"--db", db, "--json", "prune"}, tc.args...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			r.Decode(t, &rep)
			if rep.Pruned+rep.WouldPrune != tc.wantCount {
				t.Errorf("pruned %d / would prune %d, want %d", rep.Pruned, rep.WouldPrune, tc.wantCount)
			}
			var rows []listed
			mustCLI(t, "--db", db, "--json", "sessions", "--children", "--limit", "100").Decode(t, &rows)
			if len(rows) != tc.remaining {
				t.Errorf("%d sessions left, want %d", len(rows), tc.remaining)
			}
		})
	}
}

func TestSessionChanges(t *testing.T) {
	db := exampleDB(t)
	type row struct {
		ID              string   `json:"id"`
		EndedAt         *float64 `json:"ended_at"`
		EndReason       *string  `json:"end_reason"`
		ParentSessionID *string  `json:"parent_session_id"`
		MessageCount    int64    `json:"message_count"`
		ToolCallCount   int64    `json:"tool_call_count"`
		InputTokens     int64    `json:"input_tokens"`
		Title           *string  `json:"title"`
	}
	var s row
	mustCLI(t, "--db", db, "--json", "end", k8sID, "--reason", "resolved").Decode(t, &s)
	if s.EndedAt == nil || deref(s.EndReason) != "resolved" {
		t.Errorf("after end: %+v", s)
	}
	mustCLI(t, "--db", db, "--json", "end", k8sID, "--reason", "other").Decode(t, &s)
	if deref(s.EndReason) != "resolved" {
		t.Errorf("second end changed the reason to %q: the first reason wins", deref(s.EndReason))
	}
	mustCLI(t, "--db", db, "--json", "reopen", k8sID).Decode(t, &s)
	if s.EndedAt != nil || s.EndReason != nil {
		t.Errorf("after reopen: %+v", s)
	}

	mustCLI(t, "--db", db, "--json", "fork", dockerID, "--at", "4", "--id", "docker-branch", "--title", "Docker branch").Decode(t, &s)
	if s.ID != "docker-branch" || deref(s.ParentSessionID) != dockerID || s.MessageCount != 4 || deref(s.Title) != "Docker branch" {
		t.Errorf("fork: %+v", s)
	}
	mustCLI(t, "--db", db, "--json", "fork", "docker-branch").Decode(t, &s)
	if deref(s.ParentSessionID) != "docker-branch" || s.MessageCount != 4 || !strings.HasPrefix(s.ID, "20") {
		t.Errorf("fork with defaults: %+v", s)
	}
	if r := runCLI(t, "", "--db", db, "fork", dockerID, "--title", "proj"); r.Code != cli.ExitConflict {
		t.Errorf("fork with a taken title: exit %d, want %d (%s)", r.Code, cli.ExitConflict, r.Stderr)
	}

	mustCLI(t, "--db", db, "--json", "clear", cronID).Decode(t, &s)
	if s.MessageCount != 0 || s.ToolCallCount != 0 || s.InputTokens == 0 {
		t.Errorf("after clear: %+v (tokens are kept)", s)
	}

	// Not a terminal: no question is asked.
	var del struct{ Deleted bool }
	mustCLI(t, "--db", db, "--json", "delete", dockerID).Decode(t, &del)
	if !del.Deleted {
		t.Error("delete reported nothing deleted")
	}
	if r := runCLI(t, "", "--db", db, "show", dockerID); r.Code != cli.ExitNotFound {
		t.Errorf("show after delete: exit %d, want %d", r.Code, cli.ExitNotFound)
	}
	var child struct{ Session row }
	mustCLI(t, "--db", db, "--json", "show", "docker-branch").Decode(t, &child)
	if child.Session.ParentSessionID != nil {
		t.Errorf("the fork of a deleted session keeps parent %q", *child.Session.ParentSessionID)
	}
}

func TestDoctor(t *testing.T) {
	db := exampleDB(t)
	for _, args := range [][]string{{"doctor"}, {"doctor", "--rebuild-fts", "--optimize-fts"}, {"--read-only", "doctor"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var rep doctorReport
			mustCLI(t, append([]string{"--db", db, "--json"}, args...)...).Decode(t, &rep)
			wantFTS := "ok"
			if args[0] == "--read-only" {
				wantFTS = "skipped (needs a writable open: drop --read-only)"
			}
			if rep.SchemaVersion != 6 || strings.Join(rep.Integrity, ",") != "ok" || rep.FTS != wantFTS ||
				rep.FileMode != "0600" || rep.Sessions != exampleSessions || rep.SQLiteVersion == "" || rep.Driver == "" ||
				len(rep.Problems) != 0 || rep.Advice == nil || len(rep.Advice) != 0 {
				t.Errorf("report %+v", rep)
			}
		})
	}
}

// TestDoctorAdvisesOnPermissions: a sound store other users may read (mode
// 0644, as Hermes makes it under the usual umask) is advice with its chmod,
// not a problem: doctor exits 0 unless --strict.
func TestDoctorAdvisesOnPermissions(t *testing.T) {
	db := filepath.Join(t.TempDir(), "it's here", "state.db")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exampleDB(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	// SQLite gives the WAL the file's mode: the chmod names both.
	quoted := `'` + strings.ReplaceAll(db, `'`, `'\''`)
	chmod := "chmod 600 " + quoted + `' ` + quoted + `-wal'`
	r := runCLI(t, "", "--db", db, "--read-only", "doctor")
	if r.Code != 0 || !strings.Contains(r.Stdout, "advice: other users may read the conversations (mode 0644)") || !strings.Contains(r.Stdout, chmod) || strings.Contains(r.Stdout, "problem") {
		t.Errorf("doctor on a sound 0644 file: exit %d\n%s\nwant exit 0 and the advice %q", r.Code, r.Stdout, chmod)
	}
	var rep doctorReport
	mustCLI(t, "--db", db, "--read-only", "--json", "doctor").Decode(t, &rep)
	if rep.FileMode != "0644" || len(rep.Problems) != 0 || len(rep.Advice) != 1 || !strings.HasSuffix(rep.Advice[0], chmod) {
		t.Errorf("--json: %+v; want one piece of advice ending %q and no problem", rep, chmod)
	}
	r = runCLI(t, "", "--db", db, "--read-only", "doctor", "--strict")
	if r.Code != cli.ExitInternal || !strings.Contains(r.Stdout, chmod) || !strings.Contains(r.Stderr, "--strict") {
		t.Errorf("doctor --strict on a 0644 file: exit %d\n%s%s\nwant exit %d", r.Code, r.Stdout, r.Stderr, cli.ExitInternal)
	}
	if err := os.Chmod(db, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "--db", db, "--read-only", "doctor", "--strict"); r.Code != 0 || strings.Contains(r.Stdout, "advice") {
		t.Errorf("doctor --strict on a 0600 file: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestQuickstart(t *testing.T) {
	home := t.TempDir()
	t.Setenv("SESSIONDB_HOME", home)
	first := mustCLI(t, "quickstart")
	second := mustCLI(t, "quickstart")
	for _, want := range []string{filepath.Join(home, "state.db"), "Imported 8 example session(s), 0 already present", "$ sessiondb sessions", "[docker]"} {
		if !strings.Contains(first.Stdout, want) && !strings.Contains(strings.ToLower(first.Stdout), want) {
			t.Errorf("first run lacks %q:\n%s", want, first.Stdout)
		}
	}
	if !strings.Contains(second.Stdout, "Imported 0 example session(s), 8 already present") {
		t.Errorf("second run is not idempotent:\n%s", second.Stdout)
	}
}

// TestQuickstartFirstRun: quickstart says how many sessions the list
// folds away, prints next commands that work from where the user stands
// (`go run ./cmd/sessiondb ...` and how to install after a `go run`, the
// --db they gave), and loads the examples ending a few hours before now,
// so `stats --since 30d` shows them; a range without sessions says so.
func TestQuickstartFirstRun(t *testing.T) {
	now := time.Date(2031, 2, 3, 12, 0, 0, 0, time.UTC)
	old := exampleDB(t) // the file's own dates, before the working folder moves
	var file []listed
	mustCLI(t, "--db", old, "--json", "sessions", "--children").Decode(t, &file)
	clone := t.TempDir()
	if err := os.MkdirAll(filepath.Join(clone, "cmd", "sessiondb"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(clone)
	run := func(exe string, args ...string) clitest.Result {
		t.Helper()
		r := clitest.Run(context.Background(), clitest.Options{Now: testkit.NewClock(now).Now, Executable: exe}, args, Commands)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, r.Code, r.Stderr)
		}
		return r
	}
	goRun := filepath.Join(t.TempDir(), "go-build1234", "b001", "exe", "sessiondb")

	db := filepath.Join(t.TempDir(), "my store.db")
	out := run(goRun, "--db", db, "quickstart").Stdout
	for _, want := range []string{
		"8 session(s) in the store; 7 listed: 1 continuation is folded into the row of the session it continues",
		"$ go run ./cmd/sessiondb --db '" + db + "' sessions\n",
		"Next:\n  go run ./cmd/sessiondb --db '" + db + "' show proj\n",
		"  go run ./cmd/sessiondb --db '" + db + "' stats --since 30d\n",
		"run `go install ./cmd/sessiondb`", "PATH",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("quickstart under go run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\n  sessiondb ") || strings.Contains(out, "$ sessiondb ") {
		t.Errorf("quickstart under go run names a sessiondb that is not installed:\n%s", out)
	}
	installed := run("/usr/local/bin/sessiondb", "--db", filepath.Join(t.TempDir(), "state.db"), "quickstart").Stdout
	if strings.Contains(installed, "go run") || strings.Contains(installed, "go install") || !strings.Contains(installed, "state.db show proj\n") {
		t.Errorf("quickstart of an installed binary:\n%s", installed)
	}

	// The examples end three hours before now, spaced as in the file.
	var rows []struct {
		ID         string  `json:"id"`
		StartedAt  float64 `json:"started_at"`
		LastActive float64 `json:"last_active"`
	}
	run("", "--db", db, "--json", "sessions", "--children").Decode(t, &rows)
	var newest float64
	started := map[string]float64{}
	for _, r := range rows {
		newest = max(newest, r.LastActive)
		started[r.ID] = r.StartedAt
	}
	if got := sessiondb.FromEpochSeconds(newest); got.Sub(now.Add(-3*time.Hour)).Abs() > time.Second {
		t.Errorf("the newest example message is at %v, want three hours before %v", got, now)
	}
	for _, f := range file {
		if d := (started[f.ID] - started[dockerID]) - (f.StartedAt - file[len(file)-1].StartedAt); math.Abs(d) > 0.001 || f.ID == "" {
			t.Errorf("%s starts %v after the Docker session; in the file %v", f.ID, started[f.ID]-started[dockerID], f.StartedAt-file[len(file)-1].StartedAt)
		}
	}
	if stats := run("", "--db", db, "stats", "--since", "30d").Stdout; !strings.Contains(stats, "openai/gpt-5-codex") {
		t.Errorf("stats --since 30d after quickstart shows no session:\n%s", stats)
	}

	// The file's own dates, five years before the clock: nothing in range.
	if stats := run("", "--db", old, "stats", "--since", "30d").Stdout; stats != "no sessions in this range: none started in the last 30d\n" {
		t.Errorf("stats over an empty range: %q", stats)
	}
	if stats := run("", "--db", old, "stats", "--source", "nope").Stdout; stats != "no sessions in this range: none of source nope\n" {
		t.Errorf("stats of an unknown source: %q", stats)
	}
	if stats := run("", "--db", old, "stats").Stdout; !strings.Contains(stats, "MODEL") {
		t.Errorf("stats without a range: %q", stats)
	}
}

func TestBadInput(t *testing.T) {
	db := exampleDB(t)
	missing := filepath.Join(t.TempDir(), "none", "state.db")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		say      string // in stderr
	}{
		{"unknown id", []string{"--db", db, "show", "nope"}, cli.ExitNotFound, `"nope"`},
		{"ambiguous prefix", []string{"--db", db, "show", "2026"}, cli.ExitConflict, "matches several sessions"},
		{"empty id", []string{"--db", db, "show", ""}, cli.ExitInvalid, "empty"},
		{"bad duration", []string{"--db", db, "prune", "--older-than", "9x"}, cli.ExitInvalid, "--older-than"},
		{"negative duration", []string{"--db", db, "stats", "--since", "-3d"}, cli.ExitInvalid, "--since"},
		{"missing store", []string{"--db", missing, "sessions"}, cli.ExitNotFound, "sessiondb import examples/conversations.jsonl"},
		{"missing store for a change", []string{"--db", missing, "end", "x"}, cli.ExitNotFound, "no history store"},
		{"read-only refuses a change", []string{"--db", db, "--read-only", "end", dockerID}, cli.ExitInvalid, "--read-only"},
		{"unknown flag", []string{"--db", db, "sessions", "--bogus"}, cli.ExitInvalid, "--bogus"},
		{"flag value of the wrong type", []string{"--db", db, "sessions", "--limit", "many"}, cli.ExitInvalid, "--limit"},
		{"limit zero", []string{"--db", db, "sessions", "--limit", "0"}, cli.ExitInvalid, "--limit"},
		{"too many arguments", []string{"--db", db, "show", "a", "b"}, cli.ExitInvalid, "usage"},
		{"missing argument", []string{"--db", db, "search"}, cli.ExitInvalid, "query"},
		{"unknown command", []string{"--db", db, "sesions"}, cli.ExitInvalid, "unknown command"},
		{"import of a missing file", []string{"--db", db, "import", "/no/such/file.jsonl"}, cli.ExitNotFound, "/no/such/file.jsonl"},
		{"import of a folder", []string{"--db", db, "import", filepath.Dir(db)}, cli.ExitInvalid, "is a folder"},
		{"--db naming a folder", []string{"--db", filepath.Dir(db), "sessions"}, cli.ExitInvalid, "directory"},
		{"bad --synchronous", []string{"--db", db, "end", dockerID, "--synchronous", "sometimes"}, cli.ExitInvalid, "--synchronous"},
		{"delete by title is refused", []string{"--db", db, "delete", "Fix Docker build", "--yes"}, cli.ExitNotFound, "id prefix"},
		{"export of one session with --source", []string{"--db", db, "export", dockerID, "--source", "cli"}, cli.ExitInvalid, "--source"},
		{"fork at a bad message id", []string{"--db", db, "fork", dockerID, "--at", "0"}, cli.ExitInvalid, "--at"},
		{"fork with a blank title", []string{"--db", db, "fork", dockerID, "--title", " \u200b "}, cli.ExitInvalid, "--title"},
		{"fork at another session's message", []string{"--db", db, "fork", dockerID, "--at", "20"}, cli.ExitInvalid, "has no message with id 20 (the ids are the \"id N\" beside each message"},
		{"fork at a message past the end", []string{"--db", db, "fork", dockerID, "--at", "99999"}, cli.ExitInvalid, "has no message with id 99999"},
		{"fork onto an id over the limit", []string{"--db", db, "fork", dockerID, "--id", strings.Repeat("f", 256)}, cli.ExitInvalid, "256 bytes long, the limit is 255"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", tc.args...)
			if r.Code != tc.wantCode || !strings.Contains(r.Stderr, tc.say) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.Code, r.Stderr, tc.wantCode, tc.say)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a read command created %s (err %v)", missing, err)
	}
}

func TestReadOnly(t *testing.T) {
	db := exampleDB(t)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	var rows []listed
	mustCLI(t, "--db", db, "--read-only", "--json", "sessions").Decode(t, &rows)
	if len(rows) == 0 {
		t.Error("read-only listing is empty")
	}
	mustCLI(t, "--db", db, "--read-only", "search", "docker")
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("read-only commands changed the file")
	}
}

func TestParseAge(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"90d", 90, true}, {"90", 90, true}, {"12h", 0.5, true}, {"2w", 14, true}, {"1.5d", 1.5, true},
		{" 3D ", 3, true}, {"", 0, false}, {"d", 0, false}, {"0d", 0, false}, {"-1", 0, false},
		{"9x", 0, false}, {"NaN", 0, false}, {"Inf", 0, false}, {"1e400", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseAge("--older-than", tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("parseAge(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

// withoutMessageIDs re-encodes an exported session without its message ids
// (a store may number imported messages afresh) for comparison.
func withoutMessageIDs(t *testing.T, line string) string {
	t.Helper()
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatal(err)
	}
	msgs, _ := rec["messages"].([]any)
	for _, m := range msgs {
		delete(m.(map[string]any), "id")
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHitIndex(t *testing.T) {
	row := func(role, content string) sessiondb.ContextRow {
		return sessiondb.ContextRow{Role: role, Content: content}
	}
	tests := []struct {
		name    string
		snippet string
		role    string
		context []sessiondb.ContextRow
		want    int
	}{
		{"middle of three", "x", "user", []sessiondb.ContextRow{row("user", "a"), row("user", "x"), row("assistant", "b")}, 1},
		{"alone", "x", "user", []sessiondb.ContextRow{row("user", "x")}, 0},
		{"first of two", "the >>>docker<<< build", "user", []sessiondb.ContextRow{row("user", "fix the docker build"), row("assistant", "ok")}, 0},
		{"last of two", "...image is >>>small<<< now", "assistant", []sessiondb.ContextRow{row("user", "make it small"), row("assistant", "the image is small now")}, 1},
		{"two that cannot be told apart", "same", "user", []sessiondb.ContextRow{row("user", "same same"), row("user", "same same")}, -1},
		{"none", "x", "user", nil, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hit := &sessiondb.SearchHit{Snippet: tc.snippet, Role: tc.role, Context: tc.context}
			if got := hitIndex(hit); got != tc.want {
				t.Errorf("hitIndex = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestShowCutsLongToolResults(t *testing.T) {
	_, lines := exampleLines(t)
	long := strings.Repeat("0123456789", 150) // 1500 characters
	rec := strings.Replace(lines[cronID], `"content":"Filesystem`, `"content":"`+long+`Filesystem`, 1)
	if rec == lines[cronID] {
		t.Fatal("the cron example no longer has the df output this test lengthens")
	}
	db := filepath.Join(t.TempDir(), "state.db")
	if r := runCLI(t, rec+"\n", "--db", db, "import", "-"); r.Code != 0 {
		t.Fatalf("import: %s", r.Stderr)
	}
	tests := []struct {
		name    string
		args    []string
		cut     bool
		hasTail bool
	}{
		{"cut by default", nil, true, false},
		{"whole with --full", []string{"--full"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := mustCLI(t, append([]string{"--db", db, "show", cronID}, tc.args...)...).Stdout
			if got := strings.Contains(out, "more characters (--full shows them)"); got != tc.cut {
				t.Errorf("cut marker present = %v, want %v", got, tc.cut)
			}
			if got := strings.Contains(out, "Mounted on"); got != tc.hasTail {
				t.Errorf("end of the long result shown = %v, want %v", got, tc.hasTail)
			}
		})
	}
}

// cancelAfterFirstLine hands out one line per Read and cancels the context
// when asked for the second, like a person pressing Ctrl-C mid-import.
type cancelAfterFirstLine struct {
	lines  []string
	reads  int
	cancel context.CancelFunc
}

func (r *cancelAfterFirstLine) Read(p []byte) (int, error) {
	if len(r.lines) == 0 {
		return 0, io.EOF
	}
	if r.reads++; r.reads == 2 {
		r.cancel()
	}
	n := copy(p, r.lines[0]+"\n")
	r.lines = r.lines[1:]
	return n, nil
}

func TestImportInterrupted(t *testing.T) {
	_, lines := exampleLines(t)
	db := filepath.Join(t.TempDir(), "state.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := &cancelAfterFirstLine{lines: []string{lines[dockerID], lines[cronID], lines[k8sID]}, cancel: cancel}
	r := clitest.Run(ctx, clitest.Options{Stdin: in}, []string{"--db", db, "import", "-"}, Commands)
	if r.Code != 130 || !strings.Contains(r.Stderr, "stopped after importing 1 session(s)") {
		t.Fatalf("exit %d, stderr %q; want 130 and what was kept", r.Code, r.Stderr)
	}
	var rows []listed
	mustCLI(t, "--db", db, "--json", "sessions").Decode(t, &rows)
	if len(rows) != 1 || rows[0].ID != dockerID {
		t.Errorf("after the interrupted import: %+v, want only %s", rows, dockerID)
	}
}

func TestIndent(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a", "  a"},
		{"a\nb\n", "  a\n  b"},
		{"a\n\nb", "  a\n\n  b"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := indent(tc.in, "  "); got != tc.want {
			t.Errorf("indent(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParseAge: any text gives a positive finite age or an invalid error,
// never a panic.
func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"90d", "12h", "2w", "7", "1.5d", "", "-1", "1e309d", "NaNh", "0x10", "d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		days, err := parseAge("--older-than", s)
		if err != nil {
			if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
				t.Fatalf("parseAge(%q): error %v has code %q, want invalid", s, err, sessiondb.ErrorCode(err))
			}
			return
		}
		if !(days > 0) || math.IsInf(days, 0) {
			t.Fatalf("parseAge(%q) = %v: want a positive finite age", s, days)
		}
	})
}

// FuzzParseRecord: any import line gives a record with an id or an invalid
// error, never a panic.
func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{`{"id":"a"}`, `{"id":"a","parent_session_id":"b"}`, `{"id":1}`, `[]`, `null`, `{`, `{"id":"a","parent_session_id":3}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseRecord([]byte(s), 1)
		if err != nil {
			if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
				t.Fatalf("parseRecord(%q): code %q, want invalid", s, sessiondb.ErrorCode(err))
			}
			return
		}
		if p.id == "" || p.rec == nil {
			t.Fatalf("parseRecord(%q) = %+v without an error", s, p)
		}
	})
}

// TestShowLongSessionInPages: show reads a long session a page at a time
// (so it is never held whole) and prints exactly what one read of the
// whole session gives: every message once, in order, and --json the same
// bytes as the whole value encoded at once.
func TestShowLongSessionInPages(t *testing.T) {
	const n = 2*showPage + 150
	msgs := make([]any, 0, n)
	for i := 0; len(msgs) < n; i++ {
		ts := 1.7e9 + float64(len(msgs))
		msgs = append(msgs, map[string]any{"role": "user", "content": "turn <" + strings.Repeat("x", i%7) + "> & more", "timestamp": ts})
		if i%3 == 0 { // a tool call group, which a page never splits
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": "", "timestamp": ts + 0.1,
					"tool_calls": []any{map[string]any{"id": "c" + strings.Repeat("1", i%5+1), "type": "function", "function": map[string]any{"name": "terminal", "arguments": "{}"}}}},
				map[string]any{"role": "tool", "content": "result", "tool_call_id": "c1", "tool_name": "terminal", "timestamp": ts + 0.2})
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "answer", "timestamp": ts + 0.3})
	}
	rec, err := json.Marshal(map[string]any{"id": "long1", "source": "cli", "started_at": 1.7e9, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "state.db")
	if r := runCLI(t, string(rec)+"\n", "--db", db, "import", "-"); r.Code != 0 {
		t.Fatalf("import: %s", r.Stderr)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := st.GetMessages(ctx, "long1")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.GetSession(ctx, "long1")
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if len(whole) != len(msgs) || len(whole) <= 2*showPage {
		t.Fatalf("%d messages stored, want %d (more than two pages)", len(whole), len(msgs))
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"session": sess, "messages": whole, "has_earlier": false, "model_switches": []any{}, "models": []any{}}); err != nil {
		t.Fatal(err)
	}
	// show --json streams what encoding the whole session at once gives,
	// each message with its place in the session before its fields.
	got := mustCLI(t, "--db", db, "--json", "show", "long1").Stdout
	for i := range whole {
		got = strings.Replace(got, fmt.Sprintf("{\n      \"position\": %d,\n      \"id\"", i+1), "{\n      \"id\"", 1)
	}
	if got != want.String() {
		t.Errorf("show --json differs from the whole session encoded at once, positions 1..%d aside (%d bytes, want %d)", len(whole), len(got), want.Len())
	}
	text := mustCLI(t, "--db", db, "show", "long1").Stdout
	at := 0
	for i, m := range whole {
		head := fmt.Sprintf("#%d (id %d) %s", i+1, m.ID, m.Role)
		i := strings.Index(text[at:], head)
		if i < 0 {
			t.Fatalf("message %d is missing from the transcript, or out of order", m.ID)
		}
		at += i + len(head)
	}
	if c := strings.Count(text, "\n#"); c != len(whole) {
		t.Errorf("the transcript shows %d messages, want %d", c, len(whole))
	}
}

// TestSessionsChainRow: the proj chain (proj, compressed into proj #2)
// shows as one row whose every figure is the chain's total, marked as a
// chain of two, with the root's start; --json keeps Hermes' projection and
// adds the totals as "chain".
func TestSessionsChainRow(t *testing.T) {
	db := exampleDB(t)
	const rootID, tipID = "20260402_140511_4e81b2", "20260402_141202_d07a13"
	var row string
	for _, l := range strings.Split(mustCLI(t, "--db", db, "sessions").Stdout, "\n") {
		if strings.HasPrefix(l, tipID) {
			row = l
		}
	}
	// proj: 11 messages, 3 tool calls, 3.1k tokens, $0.0421; proj #2: 8, 2,
	// 2.1k, $0.0209 (both estimated).
	f := strings.Fields(row)
	if !strings.Contains(row, "[chain of 2] proj #2") || len(f) < 16 || f[12] != "19" || f[13] != "5" || f[14] != "5.2k" || f[15] != "$0.0630" {
		t.Errorf("chain row %q (fields %q), want [chain of 2] with 19 messages, 5 tools, 5.2k tokens, $0.0630", row, f)
	}
	var rows []struct {
		ID           string  `json:"id"`
		StartedAt    float64 `json:"started_at"`
		MessageCount int64   `json:"message_count"`
		Chain        *struct {
			Key      string  `json:"key"`
			Sessions int64   `json:"sessions"`
			Messages int64   `json:"messages"`
			CostUSD  float64 `json:"cost_usd"`
		} `json:"chain"`
	}
	mustCLI(t, "--db", db, "--json", "sessions").Decode(t, &rows)
	for _, r := range rows {
		if r.ID != tipID {
			if r.Chain != nil {
				t.Errorf("%s: chain %+v on a session without continuations", r.ID, r.Chain)
			}
			continue
		}
		if r.MessageCount != 8 || r.Chain == nil || r.Chain.Key != rootID || r.Chain.Sessions != 2 || r.Chain.Messages != 19 {
			t.Errorf("--json chain row: %+v chain %+v", r, r.Chain)
		}
	}
}
