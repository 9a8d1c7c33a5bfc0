package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// The moves of the schema-21 fixture (issue 19): export then import, copy,
// and Hermes' own export lines imported, each compared row by row with the
// file Hermes wrote (or with Hermes' own import of the same lines).

// hermes21Empty copies empty.db, a state.db the current Hermes made and
// closed with nothing in it, into a temporary folder.
func hermes21Empty(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hermes21Dir, "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fileRows reads what q selects from the file at path, bypassing every
// store, each row as a column-name map (text as string).
func fileRows(t testing.TB, path, q string, args ...any) []map[string]any {
	t.Helper()
	rows, err := sqlitetest.Open(t, path).Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			m[c] = vals[i]
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// diffRows lists where two lists of rows differ, on every column but
// those skip names; label names the rows in the messages.
func diffRows(label string, want, got []map[string]any, skip ...string) []string {
	if len(want) != len(got) {
		return []string{fmt.Sprintf("%s: %d rows, want %d", label, len(got), len(want))}
	}
	var out []string
	for i := range want {
		for k, w := range want[i] {
			if slices.Contains(skip, k) {
				continue
			}
			g, ok := got[i][k]
			if !ok || !reflect.DeepEqual(w, g) {
				out = append(out, fmt.Sprintf("%s row %d (%v): %s = %#v, want %#v", label, i, want[i]["id"], k, g, w))
			}
		}
		for k := range got[i] {
			if _, ok := want[i][k]; !ok && !slices.Contains(skip, k) {
				out = append(out, fmt.Sprintf("%s row %d: column %s is not in the original", label, i, k))
			}
		}
	}
	return out
}

const (
	allSessions = "SELECT * FROM sessions ORDER BY id"
	allMessages = "SELECT * FROM messages ORDER BY id"
	allUsage    = "SELECT * FROM session_model_usage ORDER BY session_id, model, billing_provider, billing_base_url, billing_mode"
)

// exportLines is ExportAll of st written as an export file's lines.
func exportLines(t testing.TB, st *Store) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := st.ExportAll(context.Background(), "", func(rec map[string]any) error { return sessiondb.WriteExport(w, rec) }); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return bytes.SplitAfter(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
}

// importLines imports each line (sessiondb.DecodeRecord) into st and
// returns what was dropped; every line must be imported.
func importLines(t testing.TB, st *Store, lines [][]byte, opts sessiondb.ImportOptions) []sessiondb.DroppedField {
	t.Helper()
	var dropped []sessiondb.DroppedField
	for i, line := range lines {
		rec, err := sessiondb.DecodeRecord(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		r, err := st.ImportSession(context.Background(), rec, opts)
		if err != nil || !r.Imported {
			t.Fatalf("line %d (%v): %+v, %v", i+1, rec["id"], r, err)
		}
		dropped = sessiondb.MergeDropped(dropped, r.Dropped)
	}
	return dropped
}

// conversations is our replay of every session of st.
func conversations(t testing.TB, st *Store) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, id := range hermes21Sessions(t) {
		c, err := st.GetMessagesAsConversation(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = asJSON(t, c)
	}
	return out
}

// Export, then import into a state.db the current Hermes made: every
// message row comes back whole (ids, hidden rows and their marks, the
// newer columns, content stored byte for byte as Hermes stored it), every
// session column but the live state, which the import resets as Hermes'
// own does, and every usage row; nothing is dropped.
func TestHermes21ExportImportKeepsEverything(t *testing.T) {
	src := hermes21Copy(t)
	from := openTestStore(t, src, Options{ReadOnly: true})
	dst := hermes21Empty(t)
	to := openTestStore(t, dst, Options{})
	if dropped := importLines(t, to, exportLines(t, from), sessiondb.ImportOptions{}); dropped != nil {
		t.Errorf("dropped %v; a schema-21 file has a place for everything", dropped)
	}
	for _, d := range diffRows("messages", fileRows(t, src, allMessages), fileRows(t, dst, allMessages)) {
		t.Error(d)
	}
	for _, d := range diffRows("session_model_usage", fileRows(t, src, allUsage), fileRows(t, dst, allUsage)) {
		t.Error(d)
	}
	want, got := fileRows(t, src, allSessions), fileRows(t, dst, allSessions)
	for _, d := range diffRows("sessions", want, got, sessiondb.LiveStateColumns...) {
		t.Error(d)
	}
	// The live state is Hermes' import's: defaults, where the fixture's
	// telegram session holds a peer, a pending handoff and a cooldown.
	live := 0
	for i := range got {
		for _, c := range sessiondb.LiveStateColumns {
			if want[i][c] != nil && want[i][c] != int64(0) {
				live++
			}
			if g := got[i][c]; g != nil && g != int64(0) {
				t.Errorf("session %v: %s = %#v after import, want its default", got[i]["id"], c, g)
			}
		}
	}
	if live < 10 {
		t.Fatalf("the fixture holds %d live state values, want the telegram session's", live)
	}
	if a, b := conversations(t, from), conversations(t, to); !jsonEqual(a, b) {
		t.Errorf("the replay differs after export and import:\n%s\n%s", short(a, true), short(b, true))
	}
}

// Copy into a state.db the current Hermes made keeps everything, the live
// state included: the file is the same row for row.
func TestHermes21CopyKeepsEverything(t *testing.T) {
	src := hermes21Copy(t)
	from := openTestStore(t, src, Options{ReadOnly: true})
	dst := hermes21Empty(t)
	to := openTestStore(t, dst, Options{})
	rep, err := sessiondb.Copy(context.Background(), from, to, sessiondb.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != 19 || rep.Dropped != nil {
		t.Errorf("copy report %+v, want 19 copied, nothing dropped", rep)
	}
	for _, q := range []string{allSessions, allMessages, allUsage} {
		for _, d := range diffRows(q, fileRows(t, src, q), fileRows(t, dst, q)) {
			t.Error(d)
		}
	}
}

// Copy into a file of ours (schema 6) keeps what it can hold and names
// the rest, counted as the source file holds it: every non-default value
// of a column the file lacks, the hidden rows (left out whole), the usage
// rows. The live rows are all there, so the conversation is Hermes'.
func TestHermes21CopyIntoSchema6NamesWhatItDrops(t *testing.T) {
	src := hermes21Copy(t)
	from := openTestStore(t, src, Options{ReadOnly: true})
	dst := filepath.Join(t.TempDir(), "v6.db")
	to := openTestStore(t, dst, Options{})
	rep, err := sessiondb.Copy(context.Background(), from, to, sessiondb.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What the source holds beyond v6, counted by SQL from its own
	// schema: a value that is neither NULL nor the column's default.
	want := map[string]int{}
	v6 := map[string][]column{"sessions": sessionColumns, "messages": messageColumns}
	for table, cols := range v6 {
		for _, c := range fileRows(t, src, "SELECT name, dflt_value FROM pragma_table_info(?)", table) {
			name := c["name"].(string)
			if slices.ContainsFunc(cols, func(v column) bool { return v.name == name }) || (table == "messages" && name == "active") {
				continue
			}
			cond := name + " IS NOT NULL"
			if d, ok := c["dflt_value"].(string); ok {
				cond += " AND " + name + " <> " + d
			}
			if table == "messages" {
				cond += " AND active <> 0" // hidden rows are left out whole
			}
			n := sqlitetest.QueryValue(t, src, "SELECT count(*) FROM "+table+" WHERE "+cond).(int64)
			if n > 0 {
				want[table+"."+name] = int(n)
			}
		}
	}
	want["messages.active"] = int(sqlitetest.QueryValue(t, src, "SELECT count(*) FROM messages WHERE active = 0").(int64))
	want[sessiondb.UsageKey] = int(sqlitetest.QueryValue(t, src, "SELECT count(*) FROM session_model_usage").(int64))
	got := map[string]int{}
	for _, d := range rep.Dropped {
		got[d.Field] = d.Values
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dropped %v\nwant    %v", got, want)
	}
	if len(want) < 15 || want["messages.active"] != 10 {
		t.Fatalf("the fixture holds too little beyond v6: %v", want)
	}
	live := "SELECT session_id, role, content, tool_calls, timestamp FROM messages WHERE active = 1 ORDER BY id"
	for _, d := range diffRows("live messages", fileRows(t, src, live), fileRows(t, dst, "SELECT session_id, role, content, tool_calls, timestamp FROM messages ORDER BY id")) {
		t.Error(d)
	}
}

// Hermes' own export (`hermes sessions export -`) imported: the sessions
// are what Hermes' own import_sessions of the same lines made (recorded
// in reads/import_sessions.json), column for column; the messages too, but
// for their ids, which Hermes' import renumbers and ours keeps when free.
func TestHermes21ImportHermesExport(t *testing.T) {
	var want struct {
		Sessions []map[string]any `json:"session_rows"`
		Messages []map[string]any `json:"message_rows"`
		Usage    []map[string]any `json:"session_model_usage"`
	}
	hermesReads(t, "import_sessions.json", &want)
	f, err := os.ReadFile(filepath.Join(hermes21Dir, "reads", "cli_sessions_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dst := hermes21Empty(t)
	to := openTestStore(t, dst, Options{})
	if dropped := importLines(t, to, bytes.SplitAfter(bytes.TrimSuffix(f, []byte("\n")), []byte("\n")), sessiondb.ImportOptions{}); dropped != nil {
		t.Errorf("dropped %v", dropped)
	}
	got := func(q string) []map[string]any {
		out := []map[string]any{}
		rows, _ := asJSON(t, fileRows(t, dst, q)).([]any)
		for _, r := range rows {
			out = append(out, r.(map[string]any))
		}
		return out
	}
	compare := func(label string, want, got []map[string]any, skip ...string) {
		if len(want) != len(got) {
			t.Errorf("%s: %d rows, Hermes %d", label, len(got), len(want))
			return
		}
		for i := range want {
			for _, k := range skip {
				delete(want[i], k)
				delete(got[i], k)
			}
			for _, d := range fieldDiffs(want[i], got[i], nil) {
				t.Errorf("%s row %d (%v): %s", label, i, want[i]["id"], d)
			}
		}
	}
	compare("sessions", want.Sessions, got(allSessions))
	// Each session's messages in order (Hermes' ids follow the import's
	// order of sessions, ours the original ids).
	bySession := func(rows []map[string]any) []map[string]any {
		out := slices.Clone(rows)
		slices.SortStableFunc(out, func(a, b map[string]any) int {
			return strings.Compare(a["session_id"].(string), b["session_id"].(string))
		})
		return out
	}
	compare("messages", bySession(want.Messages), bySession(got(allMessages)), "id")
	compare("session_model_usage", want.Usage, got(allUsage))
	if len(want.Messages) != 64 {
		t.Fatalf("Hermes imported %d messages, want the 64 live rows of the export", len(want.Messages))
	}
	if !strings.Contains(fmt.Sprint(want.Messages), "\x00json:[") {
		t.Fatal("no multimodal row in Hermes' import")
	}
}

// Fork on a file Hermes compacted, rewound and switched models in: like
// Hermes' /branch, the fork holds the rows Hermes resumes (the active
// ones), live, with every field of theirs, and counts them.
func TestHermes21ForkCopiesWhatHermesResumes(t *testing.T) {
	path := hermes21Copy(t)
	s := openTestStore(t, path, Options{})
	ctx := context.Background()
	cols := "role, content, tool_call_id, tool_calls, tool_name, effect_disposition, timestamp, token_count, finish_reason, " +
		"reasoning, reasoning_content, reasoning_details, codex_reasoning_items, codex_message_items, platform_message_id, observed"
	for _, src := range []string{"h21-compacted", "h21-rewound", "h21-model-switch", "h21-telegram"} {
		fork := src + "-fork"
		if _, err := s.ForkSession(ctx, src, 1<<40, sessiondb.NewSession{ID: fork}); err != nil {
			t.Fatal(err)
		}
		want := fileRows(t, path, "SELECT "+cols+" FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", src)
		got := fileRows(t, path, "SELECT "+cols+", active, compacted FROM messages WHERE session_id = ? ORDER BY id", fork)
		for _, d := range diffRows(fork, want, got, "active", "compacted") {
			t.Error(d)
		}
		for _, r := range got {
			if r["active"] != int64(1) || r["compacted"] != int64(0) {
				t.Errorf("%s: a forked row is not live: %v", fork, r)
			}
		}
		n := sqlitetest.QueryValue(t, path, "SELECT message_count FROM sessions WHERE id = ?", fork)
		if n != int64(len(want)) || len(want) == 0 {
			t.Errorf("%s: message_count %v, want the %d rows copied", fork, n, len(want))
		}
	}
	if n := sqlitetest.QueryValue(t, path, "SELECT count(*) FROM messages WHERE session_id = 'h21-compacted' AND active = 0"); n != int64(6) {
		t.Fatalf("h21-compacted holds %v hidden rows, want 6", n)
	}
}

// A file whose session_model_usage the first v20 code made (key: session,
// model, provider; no billing_mode, actual_cost_usd, cost_status or
// cost_source): usage rows go into the columns it has, two routes of one
// key add up, and what the file cannot tell apart is named.
func TestImportIntoTheFirstUsageShape(t *testing.T) {
	path := firstUsageShapeFile(t)
	s := openTestStore(t, path, Options{})
	row := func(url, mode string, in float64) map[string]any {
		return map[string]any{"model": "gpt-5", "billing_provider": "openai", "billing_base_url": url, "billing_mode": mode,
			"input_tokens": in, "api_call_count": 1.0, "estimated_cost_usd": 0.5, "actual_cost_usd": 0.0, "cost_status": "estimated"}
	}
	rec := map[string]any{"id": "s", "source": "cli", "started_at": 1.0, sessiondb.UsageKey: []any{
		row("https://a", "", 100), row("https://b", "batch", 20), row("https://a", "", 3),
		map[string]any{"model": "other", "input_tokens": 7.0},
	}}
	r, err := s.ImportSession(context.Background(), rec, sessiondb.ImportOptions{})
	if err != nil || !r.Imported {
		t.Fatalf("ImportSession = %+v, %v", r, err)
	}
	want := []sessiondb.DroppedField{
		{Field: "session_model_usage.billing_base_url", Values: 1}, {Field: "session_model_usage.billing_mode", Values: 1},
		{Field: "session_model_usage.cost_status", Values: 3},
	}
	if !reflect.DeepEqual(r.Dropped, want) {
		t.Errorf("dropped %v\nwant    %v", r.Dropped, want)
	}
	got := fileRows(t, path, "SELECT model, billing_provider, billing_base_url, api_call_count, input_tokens, estimated_cost_usd FROM session_model_usage ORDER BY model")
	wantRows := []map[string]any{
		{"model": "gpt-5", "billing_provider": "openai", "billing_base_url": "https://a", "api_call_count": int64(3), "input_tokens": int64(123), "estimated_cost_usd": 1.5},
		{"model": "other", "billing_provider": "", "billing_base_url": "", "api_call_count": int64(0), "input_tokens": int64(7), "estimated_cost_usd": 0.0},
	}
	for _, d := range diffRows("usage", wantRows, got) {
		t.Error(d)
	}
}

// The messages of an export are Hermes' get_messages with
// include_inactive, row for row and field for field (content as its parts,
// tool_calls decoded, the marks); its live rows are Hermes' export_session.
func TestHermes21ExportMessages(t *testing.T) {
	s, ctx := openHermes21(t), context.Background()
	var all struct {
		Rows map[string][]any `json:"include_inactive"`
	}
	hermesReads(t, "get_messages.json", &all)
	var exp struct {
		Sessions map[string]map[string]any `json:"export_session"`
	}
	hermesReads(t, "export.json", &exp)
	for _, id := range hermes21Sessions(t) {
		rec, err := s.ExportSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		msgs := rec["messages"].([]map[string]any)
		if g, w := asJSON(t, msgs), any(all.Rows[id]); !jsonEqual(w, g) {
			t.Errorf("%s: export's rows\n%s\nHermes' get_messages(include_inactive)\n%s", id, short(g, true), short(w, true))
		}
		if g, w := asJSON(t, sessiondb.LiveRows(msgs)), exp.Sessions[id]["messages"]; !jsonEqual(w, g) {
			t.Errorf("%s: export's live rows\n%s\nHermes' export_session\n%s", id, short(g, true), short(w, true))
		}
	}
}
