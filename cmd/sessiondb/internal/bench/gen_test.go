package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// dumpBytes generates the workload of c and returns its JSONL dump.
func dumpBytes(t *testing.T, c genConfig) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := newGenerator(c.Seed).workload(c).dump(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGeneratedWorkloadIsDeterministic(t *testing.T) {
	c := genConfig{Seed: 7, Messages: 600, Sessions: 12, LongSession: 100, Procs: 2, ProcMessages: 30}
	a, b := sha256.Sum256(dumpBytes(t, c)), sha256.Sum256(dumpBytes(t, c))
	if a != b {
		t.Fatalf("two generations of seed 7 differ: %x, %x", a, b)
	}
	// The command writes the same bytes as the generator.
	path := filepath.Join(t.TempDir(), "w.jsonl")
	code, _, errOut := benchRunCLI(t, "bench", "--dump", path, "--seed", "7", "--messages", "600", "--sessions", "12", "--long-session", "100", "--procs", "2", "--proc-messages", "30")
	if code != 0 {
		t.Fatalf("bench --dump: exit %d: %s", code, errOut)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(file) != a {
		t.Error("bench --dump wrote other bytes than the generator")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("dump mode %v, want 0600", fi.Mode().Perm())
	}
	c.Seed = 8
	if sha256.Sum256(dumpBytes(t, c)) == a {
		t.Error("seeds 7 and 8 gave the same workload")
	}
}

func TestGeneratedWorkloadShape(t *testing.T) {
	c := genConfig{Seed: 1234, Messages: 3000, Sessions: 25, LongSession: 400, Procs: 3, ProcMessages: 50}
	raw := dumpBytes(t, c)
	// The dump is what the replay reads: parsing it checks every record.
	wl, err := parseWorkload(bytes.NewReader(raw), "generated")
	if err != nil {
		t.Fatalf("the replay refuses the generated workload: %v", err)
	}
	if len(wl.sessions) != 25 || len(wl.messages) != 3000 || wl.concRecords != 150 || len(wl.workers) != 3 {
		t.Fatalf("sessions %d messages %d concurrent %d workers %d; want 25, 3000, 150, 3",
			len(wl.sessions), len(wl.messages), wl.concRecords, len(wl.workers))
	}
	perSession := map[string]int{}
	roles := map[string]int{}
	calls := map[string]bool{} // tool_call ids an assistant made
	userTurns, withCalls := 0, 0
	var prev = map[string]string{} // session → role of its previous message
	for _, m := range wl.messages {
		perSession[m.SessionID]++
		roles[m.Role]++
		if m.Content == nil || len(*m.Content) == 0 || len(*m.Content) > 2000 {
			t.Fatalf("message seq %d content length out of 1..2000", m.Seq)
		}
		switch m.Role {
		case "assistant":
			if prev[m.SessionID] == "user" && m.ToolCalls != nil {
				withCalls++
			}
			for _, c := range m.ToolCalls {
				calls[c.(map[string]any)["id"].(string)] = true
			}
		case "tool":
			if m.ToolCallID == nil || !calls[*m.ToolCallID] || m.ToolName == nil {
				t.Fatalf("tool message seq %d answers no call made before it in its session", m.Seq)
			}
			if p := prev[m.SessionID]; p != "assistant" && p != "tool" {
				t.Fatalf("tool message seq %d follows a %s message", m.Seq, p)
			}
		case "user":
			userTurns++
		}
		prev[m.SessionID] = m.Role
	}
	if perSession[wl.getMessages] != 400 || wl.getMessages != wl.sessions[0].ID {
		t.Errorf("the get_messages session %s holds %d messages, want the first session with 400", wl.getMessages, perSession[wl.getMessages])
	}
	for _, s := range wl.sessions[1:] {
		if n := perSession[s.ID]; n < 108 || n > 109 {
			t.Errorf("session %s holds %d messages, want the rest shared evenly (108 or 109)", s.ID, n)
		}
	}
	// About a third of user turns go to tools (workload.py: 35%).
	if f := float64(withCalls) / float64(userTurns); f < 0.25 || f > 0.45 {
		t.Errorf("%.2f of user turns are followed by tool calls, want about 0.35", f)
	}
	if roles["tool"] == 0 || roles["user"] == 0 || roles["assistant"] == 0 {
		t.Errorf("roles %v, want all three", roles)
	}
	kinds := map[string]int{}
	for _, q := range wl.queries {
		kinds[q.Kind]++
		if q.Kind == "phrase" {
			// Lifted from message text: the two words occur in order.
			words := strings.Fields(strings.Trim(q.Q, `"`))
			found := false
			for _, m := range wl.messages {
				if strings.Contains(strings.ToLower(*m.Content), words[0]+" "+words[1]) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("phrase %s is in no message", q.Q)
			}
		}
	}
	want := map[string]int{"word": 15, "two_words": 10, "phrase": 10, "prefix": 10, "or": 5}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s queries, want %d", kinds[k], k, n)
		}
	}
	for _, w := range wl.workers {
		if len(w.Messages) != 50 {
			t.Errorf("worker %d has %d messages, want 50", w.Worker, len(w.Messages))
		}
	}
	var meta map[string]any
	if err := json.Unmarshal(raw[:bytes.IndexByte(raw, '\n')], &meta); err != nil || meta["type"] != "meta" || meta["workload_version"] != 2.0 || meta["seed"] != 1234.0 {
		t.Errorf("first record %v, %v; want the meta record of version 2, seed 1234", meta, err)
	}
}

// TestBenchGeneratedRun runs the whole benchmark on a generated workload:
// no file needed.
func TestBenchGeneratedRun(t *testing.T) {
	code, out, errOut := benchRunCLI(t, "bench", "--messages", "300", "--sessions", "6", "--long-session", "60",
		"--procs", "2", "--proc-messages", "20", "--group-commit-messages", "32", "--quiet", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	want := map[string]float64{"append.messages": 300, "get_messages.rows": 60, "concurrent.procs": 2,
		"concurrent.rows_stored": 40, "concurrent.rows_expected": 40, "concurrent.errors_total": 0}
	for k, w := range want {
		if v, _ := jsonPath(res, k); v != w {
			t.Errorf("%s = %v, want %v", k, v, w)
		}
	}
	pq, _ := jsonPath(res, "search.per_query")
	if n := len(pq.([]any)); n != 50 {
		t.Errorf("%d queries ran, want 50", n)
	}
	for _, q := range pq.([]any) {
		m := q.(map[string]any)
		if m["kind"] == "phrase" && len(m["ids"].([]any)) == 0 {
			t.Errorf("phrase %v (lifted from a message) found nothing", m["q"])
		}
	}
}

// growthRun runs bench --growth with args and returns its JSON lines.
func growthRun(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	code, out, errOut := benchRunCLI(t, append([]string{"bench", "--growth", "--quiet", "--read-commands=false", "--append-messages", "20"}, args...)...)
	if code != 0 {
		t.Fatalf("bench --growth: exit %d: %s", code, errOut)
	}
	var steps []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not a JSON object: %v", line, err)
		}
		steps = append(steps, m)
	}
	return steps
}

// checkRounds fails unless the object at key of step s has three round
// rates and msgs_per_s is their median.
func checkRounds(t *testing.T, s map[string]any, key string) {
	t.Helper()
	rates, _ := jsonPath(s, key+".rounds_msgs_per_s")
	rs, _ := rates.([]any)
	if len(rs) != 3 {
		t.Fatalf("%s.rounds_msgs_per_s = %v, want 3 rounds", key, rates)
	}
	v := []float64{rs[0].(float64), rs[1].(float64), rs[2].(float64)}
	sort.Float64s(v)
	if got, _ := jsonPath(s, key+".msgs_per_s"); got != v[1] {
		t.Errorf("%s.msgs_per_s = %v, want the median round %v of %v", key, got, v[1], rs)
	}
}

func TestGrowthSteps(t *testing.T) {
	store := filepath.Join(t.TempDir(), "growth.db")
	steps := growthRun(t, "--steps", "600,3000", "--sessions", "300", "--store", store)
	if len(steps) != 2 {
		t.Fatalf("%d lines, want one per step", len(steps))
	}
	for i, s := range steps {
		num := func(k string) float64 {
			v, ok := jsonPath(s, k)
			if !ok {
				t.Fatalf("step %d lacks %s", i+1, k)
			}
			return v.(float64)
		}
		if num("step") != float64(i+1) {
			t.Errorf("step %v, want %d", s["step"], i+1)
		}
		// The long session is min(20000, first step / 2) messages.
		if num("long_session_messages") != 300 {
			t.Errorf("step %d: long session %v messages, want 300", i+1, s["long_session_messages"])
		}
		// Each step holds at least its messages (whole sessions are imported)
		// plus the appends of every step so far, less what prunes removed.
		target := []float64{600, 3000}[i]
		if m := num("messages"); m < target-200 || m > target+200 {
			t.Errorf("step %d holds %v messages, want about %v", i+1, m, target)
		}
		if num("append.messages") != 20 || num("append.rounds") != 3 || num("append.msgs_per_s") <= 0 {
			t.Errorf("step %d append %v", i+1, s["append"])
		}
		// The rate is the median round's, and the baseline (the first
		// step's size by default) ran the same rounds beside them.
		checkRounds(t, s, "append")
		checkRounds(t, s, "append.baseline")
		if b := num("append.baseline.store_messages"); b < 600-200 || b > 600+200+3*20 {
			t.Errorf("step %d: baseline store of %v messages, want about the first step's 600", i+1, b)
		}
		if want := round(num("append.msgs_per_s")/num("append.baseline.msgs_per_s"), 3); num("append.ratio_vs_baseline") != want {
			t.Errorf("step %d: ratio_vs_baseline %v, want %v", i+1, num("append.ratio_vs_baseline"), want)
		}
		for _, k := range []string{"list.keyset_first.rows", "list.keyset_deep.rows", "list.offset_first.rows", "list.offset_deep.rows",
			"list.keyset_source_first.rows", "list.last_active_first.rows", "hermes_v6.list_first.rows", "hermes_v6.list_deep.rows"} {
			if num(k) <= 0 {
				t.Errorf("step %d %s = %v, want rows", i+1, k, num(k))
			}
		}
		if num("transcript.first_page.rows") < 50 || num("transcript.last_page.rows") < 50 || num("transcript.get_messages.rows") != 300 {
			t.Errorf("step %d transcript %v", i+1, s["transcript"])
		}
		if num("hermes_v6.get_messages.rows") != 300 || num("hermes_v6.newest_last_page.rows") != 50 {
			t.Errorf("step %d Hermes' transcript reads %v", i+1, s["hermes_v6"])
		}
		if num("search.zero_hit_queries") > 10 || num("hermes_v6.search.p50_ms") <= 0 {
			t.Errorf("step %d search %v, Hermes' %v", i+1, s["search"], s["hermes_v6"])
		}
		if num("export.messages") <= 0 || num("db_bytes") <= 0 || num("peak_mb") <= 0 {
			t.Errorf("step %d export %v, db_bytes %v, peak %v", i+1, s["export"], s["db_bytes"], s["peak_mb"])
		}
		// 1% of the sessions, rounded down, the oldest.
		if want := float64(int(num("sessions") / 100)); num("prune.sessions") != want {
			t.Errorf("step %d pruned %v sessions of %v, want %v", i+1, num("prune.sessions"), num("sessions"), want)
		}
	}
	// A kept store continues: a run imports back only what the last prune
	// removed (the oldest sessions, which its first step holds).
	pruned, _ := jsonPath(steps[1], "prune.messages")
	again := growthRun(t, "--steps", "600,3000", "--sessions", "300", "--store", store)
	if got, _ := jsonPath(again[0], "imported_messages"); got != pruned || got == 0.0 {
		t.Errorf("continuing the store imported %v messages, want the %v the prune removed", got, pruned)
	}
	pruned, _ = jsonPath(again[0], "prune.messages")
	if got, _ := jsonPath(again[1], "imported_messages"); got != pruned {
		t.Errorf("its second step imported %v messages, want the %v its first step pruned", got, pruned)
	}
}

// TestRusagePeak: measureCommand reports a command's own peak memory, not
// the bench's: the test binary stands in for sessiondb as the intermediate
// bench-rusage process (TestMain), as the growth benchmark runs it.
func TestRusagePeak(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 (which .ci/run installs) is needed to allocate a known amount: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// This process holds 400 MiB while it measures: none of it may show.
	ballast := make([]byte, 400<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	peak := func(code string) float64 {
		t.Helper()
		rep, err := measureCommand(ctx, self, []string{py, "-c", code})
		if err != nil {
			t.Fatal(err)
		}
		return rep.PeakMB
	}
	small, big := peak("pass"), peak("b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096])")
	// A peak is a maximum over the measured processes (the re-executed
	// test binary that waits, and the command), not a sum: "nothing" is
	// the waiting binary's own, some 70 MB with the packages it links, and
	// the 300 MiB command's peak replaces it rather than adding to it.
	if big < 300 || big-small < 200 || small > 200 {
		t.Errorf("peak of a 300 MiB allocation %v MB, of nothing %v MB", big, small)
	}
	runtime.KeepAlive(ballast)
	if _, err := measureCommand(ctx, self, []string{py, "-c", "raise SystemExit(3)"}); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a failing command: %v, want its exit status", err)
	}
}
