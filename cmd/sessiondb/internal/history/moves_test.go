package history

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// hermes21 is the schema-21 fixture Hermes wrote (sqlite/testdata/hermes21).
const hermes21 = "../../../../sqlite/testdata/hermes21"

// hermes21File copies the fixture's file name (state.db, or empty.db: a
// state.db the current Hermes made with nothing in it) into a temporary
// folder.
func hermes21File(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hermes21, name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// lines decodes JSON Lines, one object each.
func lines(t *testing.T, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// The fixture Hermes wrote, copied to PostgreSQL and back into a state.db
// the current Hermes made: every row comes back as it was (the live state
// too: copy keeps it), and the three exports are the same bytes.
func TestHermes21CopyThroughPostgres(t *testing.T) {
	url := pgURL(t)
	src := hermes21File(t, "state.db")
	back := hermes21File(t, "empty.db")
	var there, home struct {
		Copied  int
		Dropped []any
	}
	mustCLI(t, "--json", "copy", "--from", src, "--to", url).Decode(t, &there)
	mustCLI(t, "--json", "copy", "--from", url, "--to", back).Decode(t, &home)
	if there.Copied != 19 || home.Copied != 19 || len(there.Dropped) != 0 || len(home.Dropped) != 0 {
		t.Fatalf("copies %+v and %+v, want 19 sessions each way, nothing dropped", there, home)
	}
	for _, q := range []string{
		"SELECT * FROM sessions ORDER BY id", "SELECT * FROM messages ORDER BY id",
		"SELECT * FROM session_model_usage ORDER BY session_id, model, billing_provider, billing_base_url, billing_mode",
	} {
		a, b := sqlitetest.QueryFile(t, src, q), sqlitetest.QueryFile(t, back, q)
		if !reflect.DeepEqual(a, b) || len(a) == 0 {
			t.Errorf("%s differs after the round trip:\n%v\n%v", q, a, b)
		}
	}
	onFile := mustCLI(t, "--db", src, "export").Stdout
	for _, other := range []string{url, back} {
		if e := mustCLI(t, "--db", other, "export").Stdout; e != onFile {
			t.Errorf("the export of %s differs from the original's (%d and %d bytes)", other, len(e), len(onFile))
		}
	}
	if n := strings.Count(onFile, `"active":0`); n != 10 {
		t.Errorf("the export holds %d hidden rows, want the fixture's 10", n)
	}
}

// Hermes' own export imported into a file of ours (schema 6): what the
// file has no place for is named in a warning and counted in --json, the
// live state Hermes' import resets is not named; into a state.db the
// current Hermes made, nothing is dropped.
func TestImportNamesWhatItDrops(t *testing.T) {
	export := filepath.Join(hermes21, "reads", "cli_sessions_export.jsonl")
	b, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	// Counted from Hermes' lines: observed rows, platform ids, cwd.
	want := map[string]float64{}
	for _, rec := range lines(t, string(b)) {
		if rec["cwd"] != nil {
			want["sessions.cwd"]++
		}
		for _, m := range rec["messages"].([]any) {
			mm := m.(map[string]any)
			if mm["observed"] != 0.0 {
				want["messages.observed"]++
			}
			if mm["platform_message_id"] != nil {
				want["messages.platform_message_id"]++
			}
		}
	}
	if want["messages.observed"] == 0 || want["sessions.cwd"] == 0 {
		t.Fatalf("the export holds nothing beyond schema 6: %v", want)
	}
	v6 := filepath.Join(t.TempDir(), "v6.db")
	r := mustCLI(t, "--db", v6, "import", export)
	if !strings.Contains(r.Stderr, "warning: the store has no place for") || !strings.Contains(r.Stderr, "messages.observed (") {
		t.Errorf("import into a schema-6 file: stderr %q, want a warning naming the fields", r.Stderr)
	}
	var rep struct {
		Imported int
		Dropped  []struct {
			Field  string
			Values float64
		}
	}
	mustCLI(t, "--json", "--db", filepath.Join(t.TempDir(), "v6b.db"), "import", export).Decode(t, &rep)
	got := map[string]float64{}
	for _, d := range rep.Dropped {
		got[d.Field] = d.Values
		for _, live := range []string{"session_key", "chat_id", "handoff_state", "rewind_count"} {
			if d.Field == "sessions."+live {
				t.Errorf("live state %s named dropped: Hermes' import resets it", live)
			}
		}
	}
	for f, n := range want {
		if got[f] != n {
			t.Errorf("dropped %s: %v, want %v (of %v)", f, got[f], n, rep.Dropped)
		}
	}
	if rep.Imported != 19 || got["messages.active"] != 0 {
		t.Errorf("imported %d, hidden rows dropped %v; want 19 and none (Hermes exports live rows only)", rep.Imported, got["messages.active"])
	}

	r = mustCLI(t, "--json", "--db", hermes21File(t, "empty.db"), "import", export)
	r.Decode(t, &rep)
	if len(rep.Dropped) != 0 || strings.Contains(r.Stderr, "warning") {
		t.Errorf("import into a state.db Hermes made dropped %v (%q)", rep.Dropped, r.Stderr)
	}
}

// export --live-only writes what `hermes sessions export` writes: the same
// rows, with the same values, session by session.
func TestExportLiveOnlyIsHermesExport(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(hermes21, "reads", "cli_sessions_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	hermes := map[string]map[string]any{}
	for _, rec := range lines(t, string(b)) {
		hermes[rec["id"].(string)] = rec
	}
	ours := lines(t, mustCLI(t, "--db", hermes21File(t, "state.db"), "export", "--live-only").Stdout)
	if len(ours) != len(hermes) {
		t.Fatalf("%d sessions, Hermes %d", len(ours), len(hermes))
	}
	for _, rec := range ours {
		h := hermes[rec["id"].(string)]
		delete(h, "last_active") // computed by Hermes' listing
		delete(rec, "session_model_usage")
		if !reflect.DeepEqual(rec, h) {
			a, _ := json.Marshal(rec)
			b, _ := json.Marshal(h)
			t.Errorf("session %v:\nours   %s\nHermes %s", rec["id"], a, b)
		}
	}
	all := mustCLI(t, "--db", hermes21File(t, "state.db"), "export").Stdout
	if bytes.Count([]byte(all), []byte(`"active":0`)) != 10 {
		t.Errorf("export without --live-only lacks the hidden rows")
	}
}

// The fixture copied to PostgreSQL reads there as Hermes reads the file
// (reads/): get_session's row, get_messages' rows (the live ones) and the
// conversation get_messages_as_conversation resumes, every field of each,
// the newer columns too; message_count() of every row, and
// search's hits (what a compaction summarised away found, what a rewind
// took back not). Ids are the file's: a copy into a fresh schema keeps
// them.
func TestHermes21ReadsOnPostgres(t *testing.T) {
	url := pgURL(t)
	mustCLI(t, "copy", "--from", hermes21File(t, "state.db"), "--to", url)
	ctx := context.Background()
	st, err := store.Open(ctx, url, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	read := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join(hermes21, "reads", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	var msgs struct {
		Active map[string][]map[string]any `json:"active"`
	}
	read("get_messages.json", &msgs)
	var sessions map[string]map[string]any
	read("get_session.json", &sessions)
	if len(sessions) != len(msgs.Active) || len(sessions) == 0 {
		t.Fatalf("reads/ holds %d sessions and the messages of %d", len(sessions), len(msgs.Active))
	}
	var counts struct {
		PerSession map[string]int64 `json:"per_session"`
	}
	read("message_count.json", &counts)
	var replays struct {
		Default map[string][]map[string]any `json:"default"`
	}
	read("get_messages_as_conversation.json", &replays)
	for id, want := range msgs.Active {
		got, err := st.GetMessages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var a, b []int64
		for i, m := range want {
			a = append(a, int64(m["id"].(float64)))
			if i < len(got) {
				for _, d := range rowDiffs(m, asMap(t, got[i])) {
					t.Errorf("%s: message %d: %s", id, i, d)
				}
			}
		}
		for _, m := range got {
			b = append(b, m.ID)
		}
		s, err := st.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range rowDiffs(sessions[id], asMap(t, s)) {
			t.Errorf("%s: session: %s", id, d)
		}
		conv, err := st.GetMessagesAsConversation(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		page, err := st.GetMessagesPage(ctx, id, sessiondb.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) || len(page.Messages) != len(a) {
			t.Errorf("%s: messages %v, a page of %d; Hermes' get_messages %v", id, b, len(page.Messages), a)
		}
		hc := replays.Default[id]
		if len(conv) != len(hc) {
			t.Errorf("%s: %d entries replayed, Hermes' get_messages_as_conversation %d", id, len(conv), len(hc))
		}
		for i := range min(len(conv), len(hc)) {
			for _, d := range rowDiffs(hc[i], asMap(t, conv[i])) {
				t.Errorf("%s: replayed entry %d: %s", id, i, d)
			}
		}
		if n, err := st.MessageCount(ctx, id); err != nil || n != counts.PerSession[id] {
			t.Errorf("%s: MessageCount %d (%v), Hermes' message_count %d", id, n, err, counts.PerSession[id])
		}
	}
	var searches []struct {
		Name   string
		Result []struct{ ID int64 }
	}
	read("search_messages.json", &searches)
	checked := 0
	for _, c := range searches {
		q, sort, _ := strings.Cut(c.Name, "/")
		if sort != "rank" || !slices.Contains([]string{"flamingo", "zeppelin", "kite", "pelican", "deploy"}, q) {
			continue // read_file and parser match tool calls, which PostgreSQL's index leaves out
		}
		hits, err := st.SearchMessages(ctx, q, sessiondb.SearchFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var a, b []int64
		for _, h := range c.Result {
			a = append(a, h.ID)
		}
		for _, h := range hits {
			b = append(b, h.ID)
		}
		slices.Sort(a)
		slices.Sort(b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("search %q: hits %v, Hermes %v", q, b, a)
		}
		checked++
	}
	if checked != 5 {
		t.Fatalf("%d searches compared, want 5", checked)
	}
}

// asMap is v as JSON gives it, decoded as Hermes' recorded reads are.
func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// rowDiffs names each field of either row on which they differ, with
// Hermes' value and ours.
func rowDiffs(hermes, ours map[string]any) []string {
	var keys []string
	for k := range hermes {
		keys = append(keys, k)
	}
	for k := range ours {
		if _, ok := hermes[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		h, okH := hermes[k]
		o, okO := ours[k]
		if okH != okO || !reflect.DeepEqual(h, o) {
			hb, _ := json.Marshal(h)
			ob, _ := json.Marshal(o)
			out = append(out, fmt.Sprintf("%s: Hermes %.120s (%t), ours %.120s (%t)", k, hb, okH, ob, okO))
		}
	}
	return out
}

// The chains Hermes wrote (sqlite/testdata/hermes21chains), copied to
// PostgreSQL, list by last activity as Hermes' order_by_last_active lists
// them: each chain at its newest activity anywhere on it.
func TestHermes21ChainsByActivityOnPostgres(t *testing.T) {
	const dir = "../../../../sqlite/testdata/hermes21chains"
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(dir, "listing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Listings map[string][]struct {
			ID string `json:"id"`
		} `json:"list_sessions_rich"`
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}
	url := pgURL(t)
	mustCLI(t, "copy", "--from", file, "--to", url)
	st, err := store.Open(ctx, url, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for name, source := range map[string]string{"order_by_last_active": "", "cli": "cli", "telegram": "telegram"} {
		var ids, got []string
		for _, r := range want.Listings[name] {
			ids = append(ids, r.ID)
		}
		p, err := st.ListSessions(ctx, sessiondb.SessionQuery{Sort: sessiondb.SortLastActive, Source: source, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Sessions {
			got = append(got, r.ID)
		}
		if len(ids) == 0 || !reflect.DeepEqual(got, ids) {
			t.Errorf("%s: ours %v, Hermes %v", name, got, ids)
		}
	}
}
