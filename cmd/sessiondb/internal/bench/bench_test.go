package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/pgtest"
)

// TestMain lets the test binary stand in for the sessiondb binary: the
// concurrent phase of bench re-executes os.Executable() as
// `sessiondb --db FILE bench-worker ...`, which in a test is this binary.
func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], "bench-worker") || slices.Contains(os.Args[1:], "bench-rusage") {
		os.Exit(cli.Run(context.Background(), cli.New(os.Stdin, os.Stdout, os.Stderr), os.Args[1:], Commands))
	}
	pgtest.Main(m)
}

// tinyWorkload writes a small workload in the shape workload.py dumps:
// 3 sessions, 40 messages (with tool calls and tool results), 6 queries of
// every kind, the get_messages record and 2 concurrent workers of 12
// messages each. "zebrafish" is in exactly messages seq 7 and 23.
func tinyWorkload(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	put := func(v map[string]any) {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	put(map[string]any{"type": "meta", "workload_version": 2, "seed": 1, "messages": 40, "sessions": 3})
	sessions := []string{"bench_0000_aaaa", "bench_0001_bbbb", "bench_0002_cccc"}
	for i, id := range sessions {
		put(map[string]any{"type": "session", "id": id, "source": []string{"cli", "telegram", "discord"}[i], "model": "openai/gpt-5"})
	}
	words := []string{"deploy the docker container", "sqlite index query", "retry with jitter and backoff", "config.yaml holds the secret"}
	msg := func(typ string, seq int, sid string, worker int) map[string]any {
		content := fmt.Sprintf("Message %d: %s.", seq, words[seq%len(words)])
		if typ == "message" && (seq == 7 || seq == 23) {
			content += " A zebrafish swims by."
		}
		m := map[string]any{"type": typ, "seq": seq, "session_id": sid, "role": "user", "content": content,
			"tool_calls": nil, "tool_call_id": nil, "tool_name": nil}
		switch seq % 4 {
		case 1:
			m["role"] = "assistant"
			m["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", seq), "type": "function",
				"function": map[string]any{"name": "terminal", "arguments": `{"cmd":"ls"}`}}}
		case 2:
			m["role"] = "tool"
			m["tool_call_id"] = fmt.Sprintf("call_%d", seq-1)
			m["tool_name"] = "terminal"
		case 3:
			m["role"] = "assistant"
		}
		if worker >= 0 {
			m["worker"] = worker
		}
		return m
	}
	for seq := range 40 {
		// Session 0 gets every other message, so it is the long one.
		sid := sessions[0]
		if seq%2 == 1 {
			sid = sessions[1+(seq/2)%2]
		}
		put(msg("message", seq, sid, -1))
	}
	for i, q := range []struct{ kind, q string }{
		{"word", "zebrafish"}, {"two_words", "docker container"}, {"phrase", `"sqlite index"`},
		{"prefix", "jitt*"}, {"or", "zebrafish OR backoff"}, {"word", "nonexistentword"},
	} {
		put(map[string]any{"type": "query", "idx": i, "kind": q.kind, "q": q.q})
	}
	put(map[string]any{"type": "get_messages", "session_id": sessions[0]})
	for w := range 2 {
		sid := fmt.Sprintf("conc_w%d_0000", w)
		put(map[string]any{"type": "concurrent_session", "worker": w, "session_id": sid})
		for j := range 12 {
			put(msg("concurrent_message", j, sid, w))
		}
	}
	path := filepath.Join(t.TempDir(), "tiny.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// benchRunCLI runs the command line in-process and returns status and streams.
func benchRunCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	r := clitest.Run(context.Background(), clitest.Options{}, args, Commands)
	return r.Code, r.Stdout, r.Stderr
}

// jsonPath walks a dotted key path through decoded JSON objects.
func jsonPath(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func TestBenchReplaysWorkload(t *testing.T) {
	wl := tinyWorkload(t)
	numbers := []string{
		"append.messages", "append.seconds", "append.msgs_per_s", "import.msgs_per_s",
		"search.p50_ms", "search.p95_ms", "search.max_ms", "search.zero_hit_queries",
		"search.p50_ms_by_kind.word", "search.p50_ms_by_kind.two_words", "search.p50_ms_by_kind.phrase",
		"search.p50_ms_by_kind.prefix", "search.p50_ms_by_kind.or",
		"search.floor_p50_ms", "search.floor_p95_ms", "search.ratio_vs_floor",
		"get_messages.rows", "get_messages.p50_ms", "db_bytes",
		"concurrent.procs", "concurrent.total_wall_s", "concurrent.aggregate_msgs_per_s",
		"concurrent.errors_total", "concurrent.rows_stored", "concurrent.rows_expected",
		"concurrent.single_proc_msgs_per_s", "concurrent.ratio_vs_single_proc",
		"group_commit.msgs_per_s", "group_commit.ratio_vs_serial",
	}
	strs := []string{"impl", "driver", "sqlite_version", "go_version", "synchronous", "search.floor_includes"}
	tests := []struct {
		name    string
		args    []string
		sync    string
		wantRaw bool
	}{
		{name: "default durability", args: nil, sync: "normal"},
		{name: "full durability with raw", args: []string{"--synchronous", "FULL", "--include-raw"}, sync: "full", wantRaw: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runDir := t.TempDir()
			args := append([]string{"bench", "--workload", wl, "--dir", runDir, "--quiet", "--group-commit-messages", "32"}, tc.args...)
			code, out, errOut := benchRunCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			var res map[string]any
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
			}
			for _, k := range strs {
				v, ok := jsonPath(res, k)
				if s, isStr := v.(string); !ok || !isStr || s == "" {
					t.Errorf("%s = %#v, want a non-empty string", k, v)
				}
			}
			for _, k := range numbers {
				if v, ok := jsonPath(res, k); !ok {
					t.Errorf("%s missing", k)
				} else if _, isNum := v.(float64); !isNum {
					t.Errorf("%s = %#v, want a number", k, v)
				}
			}
			want := map[string]any{
				"impl": "sessiondb", "synchronous": tc.sync,
				"append.messages": 40.0, "get_messages.rows": 20.0, "search.zero_hit_queries": 1.0,
				"concurrent.procs": 2.0, "concurrent.errors_total": 0.0,
				"concurrent.rows_stored": 24.0, "concurrent.rows_expected": 24.0,
				"group_commit.messages": 32.0, "group_commit.goroutines": 16.0,
			}
			for k, w := range want {
				if v, _ := jsonPath(res, k); v != w {
					t.Errorf("%s = %#v, want %#v", k, v, w)
				}
			}
			p50, _ := jsonPath(res, "search.p50_ms")
			floor, _ := jsonPath(res, "search.floor_p50_ms")
			ratio, _ := jsonPath(res, "search.ratio_vs_floor")
			if f, _ := floor.(float64); f <= 0 || math.Abs(ratio.(float64)-p50.(float64)/f) > 0.01*ratio.(float64)+0.001 {
				t.Errorf("search ratio_vs_floor = %v, want p50 %v over floor p50 %v", ratio, p50, floor)
			}
			for _, k := range []string{"append.msgs_per_s", "import.msgs_per_s", "concurrent.aggregate_msgs_per_s", "concurrent.single_proc_msgs_per_s", "group_commit.msgs_per_s", "db_bytes"} {
				if v, _ := jsonPath(res, k); v.(float64) <= 0 {
					t.Errorf("%s = %v, want > 0", k, v)
				}
			}
			if d, _ := jsonPath(res, "append.msgs_per_s_by_decile"); len(d.([]any)) != 10 {
				t.Errorf("msgs_per_s_by_decile = %v, want 10 entries", d)
			}
			pq, _ := jsonPath(res, "search.per_query")
			queries, _ := pq.([]any)
			if len(queries) != 6 {
				t.Fatalf("per_query has %d entries, want 6", len(queries))
			}
			// "zebrafish" is in seq 7 and 23 only: ids 8 and 24 in a fresh store.
			ids, _ := jsonPath(queries[0], "ids")
			got := fmt.Sprint(ids)
			if got != "[8 24]" && got != "[24 8]" {
				t.Errorf("ids for zebrafish = %s, want 8 and 24", got)
			}
			if ids, _ := jsonPath(queries[5], "ids"); len(ids.([]any)) != 0 {
				t.Errorf("ids for a word in no message = %v, want none", ids)
			}
			for i, q := range queries[1:5] {
				if ids, _ := jsonPath(q, "ids"); len(ids.([]any)) == 0 {
					t.Errorf("query %d (%v) found nothing", i+1, q.(map[string]any)["q"])
				}
			}
			raw, hasRaw := jsonPath(res, "raw.append.msgs_per_s")
			ratio, hasRatio := jsonPath(res, "append.ratio_vs_raw")
			if hasRaw != tc.wantRaw || hasRatio != tc.wantRaw {
				t.Errorf("raw present %v, ratio_vs_raw present %v, want %v", hasRaw, hasRatio, tc.wantRaw)
			}
			if tc.wantRaw && (raw.(float64) <= 0 || ratio.(float64) <= 0) {
				t.Errorf("raw.append.msgs_per_s = %v, ratio_vs_raw = %v, want > 0", raw, ratio)
			}
			// The run folder goes away without --keep.
			if left, _ := os.ReadDir(runDir); len(left) != 0 {
				t.Errorf("run folder left behind: %v", left)
			}
		})
	}
}

func TestBenchKeepLeavesPrivateStore(t *testing.T) {
	wl := tinyWorkload(t)
	runDir := t.TempDir()
	code, _, errOut := benchRunCLI(t, "bench", "--workload", wl, "--dir", runDir, "--quiet", "--keep", "--group-commit-messages", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	kept, _ := filepath.Glob(filepath.Join(runDir, "sessiondb-bench-*"))
	if len(kept) != 1 {
		t.Fatalf("kept folders %v, want one", kept)
	}
	if !strings.Contains(errOut, kept[0]) {
		t.Errorf("stderr does not name the kept folder %s: %q", kept[0], errOut)
	}
	for path, want := range map[string]os.FileMode{kept[0]: 0o700, filepath.Join(kept[0], "state.db"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
}

func TestBenchRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sess := `{"type":"session","id":"s1","source":"cli","model":"m"}` + "\n"
	msg := `{"type":"message","seq":0,"session_id":"s1","role":"user","content":"hi","tool_calls":null}` + "\n"
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"generator flag beside a file", []string{"bench", "--workload", write("both.jsonl", sess+msg), "--messages", "10"}, cli.ExitInvalid, "--messages sizes a generated workload"},
		{"no messages to generate", []string{"bench", "--messages", "0"}, cli.ExitInvalid, "--messages 0"},
		{"long session longer than the workload", []string{"bench", "--messages", "10", "--long-session", "11"}, cli.ExitInvalid, "--long-session 11"},
		{"growth steps not increasing", []string{"bench", "--growth", "--steps", "2000,1000"}, cli.ExitInvalid, "each step must hold more"},
		{"growth steps not numbers", []string{"bench", "--growth", "--steps", "2000,many"}, cli.ExitInvalid, `--steps "2000,many"`},
		{"growth without append rounds", []string{"bench", "--growth", "--append-rounds", "0"}, cli.ExitInvalid, "--append-rounds 0: want 1 or more"},
		{"growth negative baseline", []string{"bench", "--growth", "--append-baseline", "-1"}, cli.ExitInvalid, "--append-baseline -1: want 0 (none)"},
		{"growth baseline too small", []string{"bench", "--growth", "--append-baseline", "50"}, cli.ExitInvalid, "at least 200 messages"},
		{"growth negative search window", []string{"bench", "--growth", "--search-window", "-5"}, cli.ExitInvalid, "--search-window -5: want 0"},
		{"growth with a workload file", []string{"bench", "--growth", "--workload", write("g.jsonl", sess+msg)}, cli.ExitInvalid, "--workload does not apply to --growth"},
		{"growth long session past the first step", []string{"bench", "--growth", "--steps", "100,1000", "--long-session", "200"}, cli.ExitInvalid, "--long-session 200"},
		{"rusage without a command", []string{"bench-rusage"}, cli.ExitInvalid, "requires at least 1 arg"},
		{"missing file", []string{"bench", "--workload", filepath.Join(dir, "nope.jsonl")}, cli.ExitNotFound, "does not exist"},
		{"bad synchronous", []string{"bench", "--workload", write("ok.jsonl", sess+msg), "--synchronous", "extra"}, cli.ExitInvalid, `--synchronous "extra"`},
		{"not JSON", []string{"bench", "--workload", write("junk.jsonl", sess+"{oops\n")}, cli.ExitInvalid, "line 2: not a JSON object"},
		{"unknown type", []string{"bench", "--workload", write("type.jsonl", sess+`{"type":"nonsense"}`+"\n")}, cli.ExitInvalid, `line 2: unknown record type "nonsense"`},
		{"undeclared session", []string{"bench", "--workload", write("undeclared.jsonl", msg)}, cli.ExitInvalid, `line 1: message seq 0 names session "s1"`},
		{"seq out of order", []string{"bench", "--workload", write("seq.jsonl", sess+strings.Replace(msg, `"seq":0`, `"seq":5`, 1))}, cli.ExitInvalid, "line 2: message seq 5 out of order"},
		{"tool_calls not a list", []string{"bench", "--workload", write("calls.jsonl", sess+strings.Replace(msg, `"tool_calls":null`, `"tool_calls":"x"`, 1))}, cli.ExitInvalid, "tool_calls must be a list or null"},
		{"newer workload version", []string{"bench", "--workload", write("version.jsonl", `{"type":"meta","workload_version":3}`+"\n"+sess+msg)}, cli.ExitInvalid, "workload_version 3"},
		{"no messages", []string{"bench", "--workload", write("empty.jsonl", sess)}, cli.ExitInvalid, "holds no message records"},
		{"negative group commit", []string{"bench", "--workload", write("ok2.jsonl", sess+msg), "--group-commit-messages", "-1"}, cli.ExitInvalid, "must be >= 0"},
		{"worker by hand", []string{"--db", filepath.Join(dir, "w.db"), "bench-worker"}, cli.ExitInvalid, "and --session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := benchRunCLI(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.wantCode, errOut)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q does not contain %q", errOut, tc.wantErr)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing on failure", out)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		p       float64
		want    float64
	}{
		{"empty", nil, 0.5, 0},
		{"one", []float64{3}, 0.95, 3},
		{"median of three", []float64{9, 1, 5}, 0.5, 5},
		{"p95 of twenty is the 19th", []float64{20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 0.95, 19},
		{"max", []float64{2, 7, 4}, 1, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.samples, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.samples, tc.p, got, tc.want)
			}
		})
	}
}

func TestDecileTimer(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		wantTotal time.Duration
		want      []float64
	}{
		{"twenty steps", 20, time.Second, []float64{20, 20, 20, 20, 20, 20, 20, 20, 20, 20}},
		{"fewer steps than tenths", 5, 500 * time.Millisecond, []float64{0, 10, 0, 10, 0, 10, 0, 10, 0, 10}},
		{"one step", 1, 100 * time.Millisecond, []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each reading of the clock moves it on by 100 ms.
			var k time.Duration
			now := func() time.Time { k++; return time.Unix(0, 0).Add(k * 100 * time.Millisecond) }
			dt := newDecileTimer(tc.n, now)
			for i := 1; i <= tc.n; i++ {
				dt.tick(i)
			}
			total, rates := dt.finish()
			if total != tc.wantTotal || fmt.Sprint(rates) != fmt.Sprint(tc.want) {
				t.Errorf("total %v rates %v, want %v %v", total, rates, tc.wantTotal, tc.want)
			}
		})
	}
}

// TestBenchOnPostgres runs the workload on SQLite and PostgreSQL in one
// run: both results carry the same keys, every concurrent and scaling
// append is stored on the server, the searches find the same messages on
// both, and the run's schemas are gone afterwards.
func TestBenchOnPostgres(t *testing.T) {
	url := pgtest.URL(t)
	wl := tinyWorkload(t)
	code, out, errOut := benchRunCLI(t, "--db", url, "bench", "--workload", wl, "--quiet", "--scaling", "1,2", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("bench --db URL: exit %d\n%s", code, errOut)
	}
	var res map[string]map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not {sqlite, postgres, ratios}: %v\n%s", err, out)
	}
	lite, pg := res["sqlite"], res["postgres"]
	if lite == nil || pg == nil || pg["backend"] != "postgres" || lite["backend"] != "sqlite" {
		t.Fatalf("want both results: %s", out)
	}
	for k := range lite {
		if _, ok := pg[k]; !ok && k != "raw" {
			t.Errorf("the postgres result lacks the key %q", k)
		}
	}
	// The bare loop ran beside the appends, with one client and with one
	// process per concurrent worker, storing every row; each ratio of the
	// run is there, and is the quotient of the figures it names.
	for _, k := range []string{"raw.append.msgs_per_s", "raw.concurrent.aggregate_msgs_per_s", "append.ratio_vs_raw",
		"concurrent.ratio_vs_raw", "import.ratio_vs_append"} {
		if v, ok := jsonPath(pg, k); !ok || v.(float64) <= 0 {
			t.Errorf("postgres %s = %v, want a positive figure", k, v)
		}
	}
	// Four processes and the bare loop ran alternated, round by round; the
	// ratio is the median round's, and no round lost a row.
	byRound, _ := jsonPath(pg, "concurrent.ratios_by_round")
	rounds, _ := byRound.([]any)
	if len(rounds) != concurrentRounds {
		t.Errorf("postgres concurrent.ratios_by_round = %v, want %d rounds", byRound, concurrentRounds)
	} else {
		rs := make([]float64, len(rounds))
		for i, r := range rounds {
			rs[i], _ = r.(float64)
		}
		slices.Sort(rs)
		if v, _ := jsonPath(pg, "concurrent.ratio_vs_raw"); v != rs[len(rs)/2] {
			t.Errorf("postgres concurrent.ratio_vs_raw = %v, want the median of %v", v, rounds)
		}
	}
	for _, k := range []string{"concurrent", "raw.concurrent"} {
		stored, _ := jsonPath(pg, k+".rows_stored")
		want, _ := jsonPath(pg, k+".rows_expected")
		if stored != want || stored == nil {
			t.Errorf("postgres %s stored %v rows, want %v", k, stored, want)
		}
	}
	// The server's plan of each statement of one search of each kind
	// (this tiny store's plans may scan: the test checks their form, the
	// full workload's run their indexes, docs/benchmarks.md).
	plans, _ := jsonPath(pg, "search.plans")
	byKind, _ := plans.(map[string]any)
	if len(byKind) == 0 {
		t.Errorf("postgres search.plans = %v, want a plan per query kind", plans)
	}
	for kind, ps := range byKind {
		lines, _ := ps.([]any)
		if len(lines) == 0 {
			t.Errorf("no plan for the %s search", kind)
		}
		for _, l := range lines {
			if s, _ := l.(string); !strings.Contains(s, "messages") || strings.Contains(s, "unreadable") {
				t.Errorf("the %s search's plan %q names no read of messages", kind, s)
			}
		}
	}
	if p, ok := jsonPath(lite, "search.plans"); ok {
		t.Errorf("sqlite search.plans = %v: plans are PostgreSQL's", p)
	}
	if inc, _ := jsonPath(pg, "raw.includes"); !strings.Contains(fmt.Sprint(inc), "INSERT INTO messages") {
		t.Errorf("raw.includes = %v, want what the bare loop does", inc)
	}
	if n, _ := jsonPath(pg, "raw.append.messages"); n != pg["append"].(map[string]any)["messages"] {
		t.Errorf("the bare loop appended %v messages, the store %v", n, pg["append"].(map[string]any)["messages"])
	}
	stored, _ := jsonPath(pg, "raw.concurrent.rows_stored")
	expected, _ := jsonPath(pg, "concurrent.rows_expected")
	if stored != expected {
		t.Errorf("the bare loop's processes stored %v rows, want %v", stored, expected)
	}
	all := map[string]any{}
	for k, v := range res {
		all[k] = v
	}
	near := func(what string, got any, a, b string) {
		t.Helper()
		x, _ := jsonPath(all, a)
		y, _ := jsonPath(all, b)
		want := x.(float64) / y.(float64)
		if g, ok := got.(float64); !ok || g < want*0.99-0.001 || g > want*1.01+0.001 {
			t.Errorf("%s = %v, want %s / %s = %.3f", what, got, a, b, want)
		}
	}
	ratios := res["ratios"]
	near("ratios.append_vs_raw", ratios["append_vs_raw"], "postgres.append.msgs_per_s", "postgres.raw.append.msgs_per_s")
	near("ratios.import_vs_append", ratios["import_vs_append"], "postgres.import.msgs_per_s", "postgres.append.msgs_per_s")
	// Four processes' ratio is the median of its rounds' (checked above).
	if v, _ := jsonPath(pg, "concurrent.ratio_vs_raw"); ratios["concurrent_vs_raw"] != v {
		t.Errorf("ratios.concurrent_vs_raw = %v, want postgres.concurrent.ratio_vs_raw = %v", ratios["concurrent_vs_raw"], v)
	}
	near("ratios.search_p95_vs_sqlite", ratios["search_p95_vs_sqlite"], "postgres.search.p95_ms", "sqlite.search.p95_ms")
	for _, r := range []map[string]any{lite, pg} {
		for _, k := range []string{"append.msgs_per_s", "search.p50_ms", "concurrent.aggregate_msgs_per_s", "db_bytes"} {
			if v, ok := jsonPath(r, k); !ok || v.(float64) <= 0 {
				t.Errorf("%s %s = %v, want a positive figure", r["backend"], k, v)
			}
		}
		stored, _ := jsonPath(r, "concurrent.rows_stored")
		expected, _ := jsonPath(r, "concurrent.rows_expected")
		if stored != expected {
			t.Errorf("%s concurrent: %v rows stored, %v expected", r["backend"], stored, expected)
		}
		scaling, _ := r["concurrent_scaling"].([]any)
		if len(scaling) != 2 {
			t.Fatalf("%s concurrent_scaling = %v, want 2 runs", r["backend"], r["concurrent_scaling"])
		}
		for _, s := range scaling {
			m := s.(map[string]any)
			if m["rows_stored"] != m["rows_expected"] || m["errors_total"].(float64) != 0 {
				t.Errorf("%s scaling run %v", r["backend"], m)
			}
		}
	}
	hitIDs := func(r map[string]any) map[string][]float64 {
		out := map[string][]float64{}
		qs, _ := jsonPath(r, "search.per_query")
		for _, q := range qs.([]any) {
			m := q.(map[string]any)
			var ids []float64
			for _, id := range m["ids"].([]any) {
				ids = append(ids, id.(float64))
			}
			sort.Float64s(ids)
			out[m["q"].(string)] = ids
		}
		return out
	}
	a, b := hitIDs(lite), hitIDs(pg)
	if len(a) == 0 {
		t.Fatal("no per-query results")
	}
	for q, ids := range a {
		if fmt.Sprint(ids) != fmt.Sprint(b[q]) {
			t.Errorf("query %q: sqlite found %v, postgres %v", q, ids, b[q])
		}
	}
	if n := pgtest.Count(t, url, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'bench\\_%'"); n != 0 {
		t.Errorf("%d bench schemas left on the server", n)
	}
}

// TestBenchServe: --serve adds the serve figures, taken over the HTTP API
// on the main store with the 20,000-message session added.
func TestBenchServe(t *testing.T) {
	wl := tinyWorkload(t)
	code, out, errOut := benchRunCLI(t, "bench", "--workload", wl, "--quiet", "--serve", "--group-commit-messages", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if v, _ := jsonPath(res, "serve.long_session_messages"); v != float64(20000) {
		t.Errorf("long_session_messages = %v", v)
	}
	for _, p := range []string{"serve.list_page.started_first.p95_ms", "serve.list_page.cost_first.p95_ms",
		"serve.transcript_first_page.start.p95_ms", "serve.transcript_first_page.end.p50_ms", "serve.search.p95_ms",
		"serve.search_p95_ratio_vs_library", "serve.live_append_to_event.other_handle.p50_ms", "serve.live_append_to_event.same_store.p50_ms"} {
		v, ok := jsonPath(res, p)
		if f, isNum := v.(float64); !ok || !isNum || f <= 0 {
			t.Errorf("%s = %v, want a positive number", p, v)
		}
	}
	if v, _ := jsonPath(res, "serve.live_append_to_event.other_handle.n"); v != float64(serveLiveRuns) {
		t.Errorf("live samples = %v, want %d", v, serveLiveRuns)
	}
}
