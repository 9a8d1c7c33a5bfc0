package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// The schema-21 fixture: testdata/hermes21/state.db, written by the current
// Hermes through its own SessionDB, and reads/, what Hermes' own reads
// returned for it (make_fixture.py made both; README.md there says how).
// The tests below compare our reads with Hermes' recorded ones, every
// session and every field.

const hermes21Dir = "testdata/hermes21"

// hermes21Copy copies the fixture into a temporary folder and returns its
// path: a test never opens the committed file (a writable open changes it).
func hermes21Copy(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hermes21Dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// openHermes21 opens a copy of the fixture read-only.
func openHermes21(t testing.TB) *Store {
	t.Helper()
	return openTestStore(t, hermes21Copy(t), Options{ReadOnly: true})
}

// hermesCall is one recorded call of a Hermes read: its name, the keyword
// arguments Hermes was called with, and what it returned.
type hermesCall struct {
	Name   string         `json:"name"`
	Args   map[string]any `json:"args"`
	Result any            `json:"result"`
}

// hermesReads decodes reads/<file> into v, numbers as json.Number so that
// jsonEqual compares them by value.
func hermesReads(t testing.TB, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hermes21Dir, "reads", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := decodeNumbers(b, v); err != nil {
		t.Fatalf("reads/%s: %v", file, err)
	}
}

// hermesCalls returns the calls of a list-valued reads file by name.
func hermesCalls(t testing.TB, file string) map[string]hermesCall {
	t.Helper()
	var calls []hermesCall
	hermesReads(t, file, &calls)
	out := make(map[string]hermesCall, len(calls))
	for _, c := range calls {
		out[c.Name] = c
	}
	return out
}

// hermesExportLines returns the sessions `hermes sessions export -` printed,
// one decoded line each.
func hermesExportLines(t testing.TB) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(hermes21Dir, "reads", "cli_sessions_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec map[string]any
		if err := decodeNumbers(sc.Bytes(), &rec); err != nil {
			t.Fatalf("cli_sessions_export.jsonl line %d: %v", len(out)+1, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// hermes21Sessions returns the fixture's session ids in creation order.
func hermes21Sessions(t testing.TB) []string {
	t.Helper()
	var meta struct {
		Sessions []string `json:"sessions"`
	}
	hermesReads(t, "meta.json", &meta)
	if len(meta.Sessions) == 0 {
		t.Fatal("reads/meta.json lists no sessions")
	}
	return meta.Sessions
}

func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// asJSON turns a value of ours into the plain JSON values Hermes' reads
// decode to, so the two compare field by field.
func asJSON(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := decodeNumbers(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// jsonEqual compares decoded JSON values; numbers by value (Python writes
// 5.0 where Go writes 5).
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		fx, err1 := strconv.ParseFloat(string(x), 64)
		fy, err2 := strconv.ParseFloat(string(y), 64)
		return err1 == nil && err2 == nil && fx == fy
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// fieldDiffs lists the keys (all of want's when keys is nil) on which the
// records differ, each with Hermes' value and ours.
func fieldDiffs(want, got map[string]any, keys []string) []string {
	if keys == nil {
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	var out []string
	for _, k := range keys {
		w, okW := want[k]
		g, okG := got[k]
		if okW != okG || !jsonEqual(w, g) {
			out = append(out, fmt.Sprintf("%s: Hermes %s, ours %s", k, short(w, okW), short(g, okG)))
		}
	}
	return out
}

func short(v any, present bool) string {
	if !present {
		return "(absent)"
	}
	b, _ := json.Marshal(v)
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}

// checkSame reports each difference of one comparison (kind, key) with
// Hermes' recorded read.
func checkSame(t *testing.T, kind, key string, diffs []string) {
	t.Helper()
	for _, d := range diffs {
		t.Errorf("%s %s: %s", kind, key, d)
	}
}

func TestHermes21FixtureIsWhatTheScriptMade(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(hermes21Dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Sum     string      `json:"state_db_sha256"`
		Version json.Number `json:"schema_version"`
	}
	hermesReads(t, "meta.json", &meta)
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != meta.Sum {
		t.Fatalf("state.db's SHA-256 is %s, reads/meta.json says %s: regenerate both with make_fixture.py", got, meta.Sum)
	}
	v, err := openHermes21(t).SchemaVersion(context.Background())
	if err != nil || strconv.Itoa(v) != meta.Version.String() {
		t.Fatalf("schema version %d (%v), want %s", v, err, meta.Version)
	}
}

// sessionV6Keys are the v6 columns our Session carries.
var sessionV6Keys = func() []string {
	var out []string
	for _, c := range sessionColumns {
		out = append(out, c.name)
	}
	return out
}()

func TestHermes21GetSession(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	var want map[string]map[string]any
	hermesReads(t, "get_session.json", &want)
	for _, id := range hermes21Sessions(t) {
		got, err := s.GetSession(ctx, id)
		if err != nil {
			t.Fatalf("GetSession(%s): %v", id, err)
		}
		checkSame(t, "get_session", id, fieldDiffs(want[id], asJSON(t, got).(map[string]any), nil))
	}
}

func TestHermes21ExportSessionRow(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	var want struct {
		ExportSession map[string]map[string]any `json:"export_session"`
	}
	hermesReads(t, "export.json", &want)
	for _, id := range hermes21Sessions(t) {
		got, err := s.ExportSession(ctx, id)
		if err != nil {
			t.Fatalf("ExportSession(%s): %v", id, err)
		}
		w, g := want.ExportSession[id], asJSON(t, got).(map[string]any)
		delete(w, "messages")
		delete(g, "messages")
		checkSame(t, "export_session_row", id, fieldDiffs(w, g, nil))
	}
}

func TestHermes21GetMessages(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	var want struct {
		Active map[string][]map[string]any `json:"active"`
	}
	hermesReads(t, "get_messages.json", &want)
	for _, id := range hermes21Sessions(t) {
		got, err := s.GetMessages(ctx, id)
		if err != nil {
			t.Fatalf("GetMessages(%s): %v", id, err)
		}
		g := asJSON(t, got).([]any)
		w := want.Active[id]
		var diffs []string
		if len(g) != len(w) {
			diffs = append(diffs, fmt.Sprintf("%d messages, Hermes %d", len(g), len(w)))
		} else {
			for i := range w {
				gm := g[i].(map[string]any)
				for _, d := range fieldDiffs(w[i], gm, unionKeys(w[i], gm)) {
					diffs = append(diffs, fmt.Sprintf("message %d: %s", i, d))
				}
			}
		}
		checkSame(t, "get_messages", id, diffs)
	}
}

// Hermes' replay (get_messages_as_conversation) of each session, entry
// by entry and key by key: the hidden rows left out, the multimodal parts
// decoded, recalled memory and a background review's turns stripped, the
// newer keys (timestamp, message_id, observed, reasoning_content, codex
// items, effect_disposition).
func TestHermes21Conversation(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	var want struct {
		Default map[string][]map[string]any `json:"default"`
	}
	hermesReads(t, "get_messages_as_conversation.json", &want)
	for _, id := range hermes21Sessions(t) {
		got, err := s.GetMessagesAsConversation(ctx, id, 0)
		if err != nil {
			t.Fatalf("GetMessagesAsConversation(%s): %v", id, err)
		}
		w := want.Default[id]
		g := asJSON(t, got).([]any)
		var diffs []string
		if len(g) != len(w) {
			diffs = append(diffs, fmt.Sprintf("%d entries, Hermes %d: ours %s", len(g), len(w), short(g, true)))
		} else {
			for i := range w {
				for _, d := range fieldDiffs(w[i], g[i].(map[string]any), unionKeys(w[i], g[i].(map[string]any))) {
					diffs = append(diffs, fmt.Sprintf("entry %d: %s", i, d))
				}
			}
		}
		checkSame(t, "conversation", id, diffs)
	}
}

// unionKeys is every key of a and b, sorted: a comparison over it finds a
// key either side lacks.
func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestHermes21CompressionTip(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	var want struct {
		Tip map[string]string `json:"get_compression_tip"`
	}
	hermesReads(t, "lineage.json", &want)
	for _, id := range hermes21Sessions(t) {
		got, err := s.CompressionTip(ctx, id)
		if err != nil {
			t.Fatalf("CompressionTip(%s): %v", id, err)
		}
		var diffs []string
		if got != want.Tip[id] {
			diffs = append(diffs, fmt.Sprintf("tip Hermes %s, ours %s", want.Tip[id], got))
		}
		checkSame(t, "compression_tip", id, diffs)
	}
}

// Hermes' listing with children (include_children, include_archived) is
// every session newest first, unprojected: ours with IncludeChildren and
// IncludeArchived lists the same rows.
func TestHermes21ListWithChildren(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	call := hermesCalls(t, "list_sessions_rich.json")["include_children"]
	got, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{IncludeChildren: true, IncludeArchived: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	w, g := call.Result.([]any), asJSON(t, got).([]any)
	if len(w) != len(g) {
		t.Fatalf("%d rows, Hermes %d", len(g), len(w))
	}
	keys := append([]string{"preview", "last_active"}, sessionV6Keys...)
	for i := range w {
		wr, gr := w[i].(map[string]any), g[i].(map[string]any)
		for _, d := range fieldDiffs(wr, gr, keys) {
			t.Errorf("row %d (%v): %s", i, wr["id"], d)
		}
	}
}

func TestHermes21Counts(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	var counts struct {
		PerSession map[string]json.Number `json:"per_session"`
	}
	hermesReads(t, "message_count.json", &counts)
	for _, id := range hermes21Sessions(t) {
		got, err := s.MessageCount(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var diffs []string
		if strconv.FormatInt(got, 10) != counts.PerSession[id].String() {
			diffs = append(diffs, fmt.Sprintf("Hermes %s, ours %d", counts.PerSession[id], got))
		}
		checkSame(t, "message_count", id, diffs)
	}
	// Our count of every session is Hermes' count with archived sessions.
	want := hermesCalls(t, "session_count.json")["include_archived"].Result.(json.Number)
	got, err := s.SessionCount(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if strconv.FormatInt(got, 10) != want.String() {
		t.Errorf("SessionCount: Hermes %s, ours %d", want, got)
	}
}

// hermesSearchFilter is our filter for the arguments of a recorded
// search_messages call; ok is false for one we have no way to make
// (include_inactive: our search never finds rewound rows).
func hermesSearchFilter(args map[string]any) (f sessiondb.SearchFilter, ok bool) {
	strs := func(v any) []string {
		var out []string
		for _, x := range v.([]any) {
			out = append(out, x.(string))
		}
		return out
	}
	for k, v := range args {
		switch k {
		case "query":
		case "sort":
			if v != nil {
				f.Sort = sessiondb.SearchSort(v.(string))
			}
		case "role_filter":
			f.Roles = strs(v)
		case "exclude_sources":
			f.ExcludeSources = strs(v)
		case "source_filter":
			f.Sources = strs(v)
		default:
			return f, false
		}
	}
	return f, true
}

// Every recorded search (ranked, newest, oldest, by role, excluding a
// source; CJK ones through Hermes' trigram index): the same hits in the
// same order, field by field, their neighbours included.
func TestHermes21Search(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	calls := hermesCalls(t, "search_messages.json")
	var names []string
	for name := range calls {
		names = append(names, name)
	}
	sort.Strings(names)
	compared := 0
	for _, name := range names {
		c := calls[name]
		f, ok := hermesSearchFilter(c.Args)
		if !ok {
			if _, inactive := c.Args["include_inactive"]; !inactive {
				t.Errorf("search %s: no filter of ours for %v", name, c.Args)
			}
			continue
		}
		compared++
		q := c.Args["query"].(string)
		got, err := s.SearchMessages(ctx, q, f)
		if err != nil {
			t.Fatalf("SearchMessages(%q): %v", q, err)
		}
		w, g := c.Result.([]any), asJSON(t, got).([]any)
		ids := func(hits []any) []string {
			out := make([]string, len(hits))
			for i, h := range hits {
				out[i] = h.(map[string]any)["id"].(json.Number).String()
			}
			return out
		}
		if wi, gi := ids(w), ids(g); fmt.Sprint(wi) != fmt.Sprint(gi) {
			t.Errorf("search %s: hits Hermes %v, ours %v", name, wi, gi)
			continue
		}
		for i := range w {
			wh, gh := w[i].(map[string]any), g[i].(map[string]any)
			for _, d := range fieldDiffs(wh, gh, unionKeys(wh, gh)) {
				t.Errorf("search %s hit %d: %s", name, i, d)
			}
		}
	}
	if compared == 0 {
		t.Error("no recorded search compared")
	}
}

// Hermes' insights split a session's tokens and cost across the models it
// used (InsightsEngine._compute_model_breakdown); our ByModel, folded by
// Hermes' display name (the model without its provider prefix, "unknown"
// for none), gives each model the same figures, field by field. Not
// compared: has_pricing and cost_status, which Hermes takes from its
// pricing table.
func TestHermes21UsageByModel(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	var ins struct {
		Breakdown []map[string]any `json:"model_breakdown"`
	}
	hermesReads(t, "insights.json", &ins)
	got, err := s.Usage(ctx, sessiondb.UsageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.ModelUsageRows {
		t.Error("ModelUsageRows is false on a file with session_model_usage")
	}
	ours := hermesModelBreakdown(got.ByModel)
	keys := []string{"sessions", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
		"reasoning_tokens", "total_tokens", "api_calls", "tool_calls", "cost", "actual_cost"}
	for _, want := range ins.Breakdown {
		model := want["model"].(string)
		g, ok := ours[model]
		if !ok {
			t.Errorf("model %s: Hermes has it, we do not (ours: %v)", model, got.ByModel)
			continue
		}
		delete(ours, model)
		for _, d := range fieldDiffs(want, g, keys) {
			t.Errorf("model %s: %s", model, d)
		}
	}
	for model := range ours {
		t.Errorf("model %s: ours, not Hermes'", model)
	}
}

// hermesModelBreakdown folds our rows by model into the fields of Hermes'
// model_breakdown, rounded as Hermes' JSON gives costs.
func hermesModelBreakdown(rows []sessiondb.UsageRow) map[string]map[string]any {
	sums := map[string]sessiondb.UsageRow{}
	for _, r := range rows {
		name := r.Key
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		if name == "" {
			name = "unknown"
		}
		x := sums[name]
		x.Add(r)
		sums[name] = x
	}
	num := func(v float64) json.Number { return json.Number(strconv.FormatFloat(v, 'g', -1, 64)) }
	cost := func(v float64) json.Number { return num(math.Round(v*1e12) / 1e12) }
	out := map[string]map[string]any{}
	for name, r := range sums {
		out[name] = map[string]any{
			"sessions": num(float64(r.Sessions)), "input_tokens": num(float64(r.InputTokens)), "output_tokens": num(float64(r.OutputTokens)),
			"cache_read_tokens": num(float64(r.CacheReadTokens)), "cache_write_tokens": num(float64(r.CacheWriteTokens)),
			"reasoning_tokens": num(float64(r.ReasoningTokens)),
			"total_tokens":     num(float64(r.InputTokens + r.OutputTokens + r.CacheReadTokens + r.CacheWriteTokens)),
			"api_calls":        num(float64(r.APICalls)), "tool_calls": num(float64(r.ToolCalls)),
			"cost": cost(r.EstimatedCostUSD), "actual_cost": cost(r.ActualCostUSD),
		}
	}
	return out
}

// What `hermes sessions export -` printed, session by session: our
// ExportAll gives each session's row with the same columns and values.
func TestHermes21ExportAllRows(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	want := map[string]map[string]any{}
	for _, rec := range hermesExportLines(t) {
		delete(rec, "messages")
		delete(rec, "last_active") // search_sessions' computed column
		want[rec["id"].(string)] = rec
	}
	n := 0
	err := s.ExportAll(ctx, "", func(rec map[string]any) error {
		n++
		g := asJSON(t, rec).(map[string]any)
		delete(g, "messages")
		id := g["id"].(string)
		w, ok := want[id]
		if !ok {
			t.Errorf("we export %s; Hermes does not", id)
			return nil
		}
		checkSame(t, "export_all_row", id, fieldDiffs(w, g, nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("we export %d sessions, Hermes %d", n, len(want))
	}
}

// Hermes' listings of the fixture (list_sessions_rich with each of its
// filters: roots and /branch children, never a delegate, orphaned or not;
// archived hidden, with or alone; a working directory; at least N
// messages; sources; a page by offset), and ours with the same filter:
// the same rows in the same order, field by field. Hermes' id_query and
// search_query (a match anywhere in a compression chain) have no
// counterpart in ours and are not compared.
func TestHermes21Listings(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	calls := hermesCalls(t, "list_sessions_rich.json")
	filters := map[string]sessiondb.RichFilter{
		"default":           {},
		"include_archived":  {IncludeArchived: true},
		"archived_only":     {ArchivedOnly: true},
		"no_projection":     {NoProjection: true},
		"cwd_project":       {Cwd: "/home/dev/project"},
		"cwd_project_slash": {Cwd: "/home/dev/project/"},
		"cwd_project_api":   {Cwd: "/home/dev/project/api"},
		"min_messages_4":    {MinMessages: 4},
		"source_telegram":   {Source: "telegram"},
		"exclude_telegram":  {ExcludeSources: []string{"telegram"}},
		"limit_offset":      {Limit: 3, Offset: 2},
	}
	keys := append([]string{"preview", "last_active"}, sessionV6Keys...)
	for name, f := range filters {
		call, ok := calls[name]
		if !ok {
			t.Fatalf("the fixture has no listing %q", name)
		}
		got, err := s.ListSessionsRich(ctx, f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, g := call.Result.([]any), asJSON(t, got).([]any)
		var wantIDs, gotIDs []any
		for _, r := range w {
			wantIDs = append(wantIDs, r.(map[string]any)["id"])
		}
		for _, r := range g {
			gotIDs = append(gotIDs, r.(map[string]any)["id"])
		}
		if !reflect.DeepEqual(wantIDs, gotIDs) {
			t.Errorf("%s: ours %v, Hermes %v", name, gotIDs, wantIDs)
			continue
		}
		for i := range w {
			for _, d := range fieldDiffs(w[i].(map[string]any), g[i].(map[string]any), keys) {
				t.Errorf("%s row %d (%v): %s", name, i, w[i].(map[string]any)["id"], d)
			}
		}
	}
	// By last activity: ours is the keyset listing's order.
	for _, name := range []string{"order_by_last_active", "order_by_last_active_archived"} {
		page, err := s.ListSessions(ctx, sessiondb.SessionQuery{Sort: sessiondb.SortLastActive, IncludeArchived: name != "order_by_last_active", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var wantIDs, gotIDs []any
		for _, r := range calls[name].Result.([]any) {
			wantIDs = append(wantIDs, r.(map[string]any)["id"])
		}
		for _, r := range page.Sessions {
			gotIDs = append(gotIDs, r.ID)
		}
		if !reflect.DeepEqual(wantIDs, gotIDs) {
			t.Errorf("%s: ours %v, Hermes %v", name, gotIDs, wantIDs)
		}
	}
}
