package storetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// v6SessionColumns are the sessions columns of schema v6, every one of which
// an export carries.
var v6SessionColumns = []string{
	"id", "source", "user_id", "model", "model_config", "system_prompt", "parent_session_id",
	"started_at", "ended_at", "end_reason", "message_count", "tool_call_count", "input_tokens",
	"output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "billing_provider",
	"billing_base_url", "billing_mode", "estimated_cost_usd", "actual_cost_usd", "cost_status",
	"cost_source", "pricing_version", "title",
}

// v6MessageColumns are the messages columns of schema v6.
var v6MessageColumns = []string{
	"id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
	"token_count", "finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items",
}

// newerMessageDefaults are the message fields of a newer Hermes' columns
// with the value a store without the column reads (normJSON's form).
var newerMessageDefaults = map[string]any{
	"reasoning_content": nil, "codex_message_items": nil, "platform_message_id": nil,
	"observed": float64(0), "effect_disposition": nil, "active": float64(1), "compacted": float64(0),
}

// testExport covers ExportSession and ExportAll.
func testExport(t *testing.T, h Harness) {
	t.Run("Session", func(t *testing.T) {
		e := newEnv(t, h)
		e.createWith(sessiondb.NewSession{ID: "s1", Source: "cli", Model: "m1", ModelConfig: map[string]any{"k": "v"}, UserID: "u1"})
		e.setTitle("s1", "Exported")
		noErr(t, "UpdateTokenCounts", e.s.UpdateTokenCounts(e.ctx, "s1", sessiondb.TokenUpdate{Input: 7, EstimatedCostUSD: f64(0.5)}))
		e.msg("s1", "user", "hello")
		e.append(sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: str("hi"),
			ToolCalls: []any{map[string]any{"id": "c1"}}, ReasoningDetails: []any{"d"}})
		e.end("s1", "user_exit")
		s := e.get("s1")

		rec, err := e.s.ExportSession(e.ctx, "s1")
		noErr(t, "ExportSession", err)
		got, ok := normJSON(t, rec).(map[string]any)
		if !ok {
			t.Fatalf("export is not an object: %v", rec)
		}
		want := normJSON(t, s).(map[string]any)
		for _, col := range v6SessionColumns {
			v, has := got[col]
			if !has {
				t.Errorf("export lacks column %q", col)
				continue
			}
			if !reflect.DeepEqual(v, want[col]) {
				t.Errorf("export %s = %v, want %v", col, v, want[col])
			}
		}
		msgs, ok := got["messages"].([]any)
		if !ok || len(msgs) != 2 {
			t.Fatalf("export messages = %v, want a list of 2", got["messages"])
		}
		wantMsgs := normJSON(t, e.messages("s1")).([]any)
		for i, m := range msgs {
			mm, _ := m.(map[string]any)
			for _, col := range v6MessageColumns {
				if _, has := mm[col]; !has {
					t.Errorf("exported message %d lacks column %q", i, col)
				}
			}
			// Every field GetMessages gives, with its value; the export
			// may carry more (a newer Hermes' columns, the marks). A
			// store without a newer column exports none, and reads its
			// default.
			for k, v := range wantMsgs[i].(map[string]any) {
				if _, has := mm[k]; !has && reflect.DeepEqual(v, newerMessageDefaults[k]) {
					continue
				}
				if !reflect.DeepEqual(mm[k], v) {
					t.Errorf("exported message %d: %s = %v, want GetMessages' %v", i, k, mm[k], v)
				}
			}
		}
		if tc := msgs[1].(map[string]any)["tool_calls"]; !reflect.DeepEqual(tc, []any{map[string]any{"id": "c1"}}) {
			t.Errorf("exported tool_calls = %v, want decoded list", tc)
		}
		if rd := msgs[1].(map[string]any)["reasoning_details"]; rd != `["d"]` {
			t.Errorf("exported reasoning_details = %#v, want the JSON string", rd)
		}
		_, err = e.s.ExportSession(e.ctx, "ghost")
		wantCode(t, "ExportSession(ghost)", err, sessiondb.ENOTFOUND)
	})

	t.Run("All", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		e.create("b", "telegram")
		e.create("c", "cli")
		e.msg("a", "user", "in a")
		e.msg("c", "user", "in c")
		cases := []struct {
			name   string
			source string
			stopAt int // yield fails on this call (1-based); 0 = never
			want   []string
		}{
			{name: "all newest first", want: []string{"c", "b", "a"}},
			{name: "one source", source: "cli", want: []string{"c", "a"}},
			{name: "no rows", source: "discord", want: nil},
			{name: "early stop", stopAt: 1, want: []string{"c"}},
			{name: "stop midway", stopAt: 2, want: []string{"c", "b"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var got []string
				err := e.s.ExportAll(e.ctx, tc.source, func(rec map[string]any) error {
					id, _ := rec["id"].(string)
					got = append(got, id)
					one, err := e.s.ExportSession(e.ctx, id)
					noErr(t, "ExportSession", err)
					if !reflect.DeepEqual(normJSON(t, rec), normJSON(t, one)) {
						t.Errorf("streamed record of %s differs from ExportSession", id)
					}
					if len(got) == tc.stopAt {
						return errStop
					}
					return nil
				})
				if tc.stopAt > 0 {
					if !errors.Is(err, errStop) {
						t.Errorf("ExportAll returned %v, want the yield error", err)
					}
				} else {
					noErr(t, "ExportAll", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("yielded %v, want %v", got, tc.want)
				}
			})
		}
	})
}

// testExportPages covers ExportSessionPages and WriteSessionExport: the
// same session as ExportSession, a page at a time; the same line as
// WriteExport of ExportSession's record.
func testExportPages(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.createWith(sessiondb.NewSession{ID: "big", Source: "cli", Model: "m1", ModelConfig: map[string]any{"k": "<v&>"}})
	e.setTitle("big", "Exported <a page> at a time")
	for i := range 150 {
		// Sizes that vary by two orders, so the pages after the first
		// are cut by size, not by count.
		e.msg("big", "user", fmt.Sprintf("message %d %s", i, strings.Repeat("x", (i%7)*20000)))
	}
	e.append(sessiondb.NewMessage{SessionID: "big", Role: "assistant", Content: str("calls"), ToolCalls: []any{map[string]any{"id": "c1"}}})
	e.create("empty", "cli")
	for _, id := range []string{"big", "empty"} {
		whole, err := e.s.ExportSession(e.ctx, id)
		noErr(t, "ExportSession", err)
		var row map[string]any
		var msgs []map[string]any
		pages := 0
		err = e.s.ExportSessionPages(e.ctx, id, func(r map[string]any) error {
			if row != nil || pages > 0 {
				t.Errorf("%s: row called twice or after a page", id)
			}
			row = r
			return nil
		}, func(p []map[string]any) error {
			if len(p) == 0 {
				t.Errorf("%s: an empty page", id)
			}
			pages++
			msgs = append(msgs, p...)
			return nil
		})
		noErr(t, "ExportSessionPages", err)
		if _, has := row["messages"]; has {
			t.Errorf("%s: the row holds messages", id)
		}
		row["messages"] = msgs
		if msgs == nil {
			row["messages"] = []map[string]any{}
		}
		if !reflect.DeepEqual(normJSON(t, row), normJSON(t, whole)) {
			t.Errorf("%s: the row and pages differ from ExportSession:\n%v\n%v", id, normJSON(t, row), normJSON(t, whole))
		}
		if id == "big" && pages < 3 {
			t.Errorf("%s: %d pages for %d messages of up to 120 KB", id, pages, len(msgs))
		}
		var streamed, encoded bytes.Buffer
		sw, ew := bufio.NewWriter(&streamed), bufio.NewWriter(&encoded)
		noErr(t, "WriteSessionExport", sessiondb.WriteSessionExport(e.ctx, e.s, id, sw))
		noErr(t, "WriteExport", sessiondb.WriteExport(ew, whole))
		sw.Flush()
		ew.Flush()
		var marshalled bytes.Buffer
		enc := json.NewEncoder(&marshalled)
		enc.SetEscapeHTML(false)
		noErr(t, "Encode", enc.Encode(whole))
		if !bytes.Equal(streamed.Bytes(), marshalled.Bytes()) || !bytes.Equal(encoded.Bytes(), marshalled.Bytes()) {
			t.Errorf("%s: WriteSessionExport wrote %d bytes, WriteExport %d, json.Encoder %d: not the same line", id, streamed.Len(), encoded.Len(), marshalled.Len())
		}
	}
	called := false
	err := e.s.ExportSessionPages(e.ctx, "ghost", func(map[string]any) error { called = true; return nil }, func([]map[string]any) error { called = true; return nil })
	wantCode(t, "ExportSessionPages(ghost)", err, sessiondb.ENOTFOUND)
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	wantCode(t, "WriteSessionExport(ghost)", sessiondb.WriteSessionExport(e.ctx, e.s, "ghost", w), sessiondb.ENOTFOUND)
	if w.Flush(); called || out.Len() != 0 {
		t.Errorf("a missing session: callbacks called %v, %d bytes written", called, out.Len())
	}
	pages := 0
	err = e.s.ExportSessionPages(e.ctx, "big", func(map[string]any) error { return nil }, func([]map[string]any) error { pages++; return errStop })
	if !errors.Is(err, errStop) || pages != 1 {
		t.Errorf("a page's error: %v after %d pages, want it returned after 1", err, pages)
	}
	err = e.s.ExportSessionPages(e.ctx, "big", func(map[string]any) error { return errStop }, func([]map[string]any) error { pages++; return nil })
	if !errors.Is(err, errStop) || pages != 1 {
		t.Errorf("the row's error: %v, pages read after it: %d", err, pages-1)
	}
}

// testCleanup covers ClearMessages and DeleteSession.
func testCleanup(t *testing.T, h Harness) {
	t.Run("Clear", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("s1", "cli")
		e.create("s2", "cli")
		e.msg("s1", "user", "zebra question")
		e.append(sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: str("zebra answer"), ToolCalls: []any{"x", "y"}})
		keep := e.msg("s2", "user", "zebra elsewhere")
		noErr(t, "UpdateTokenCounts", e.s.UpdateTokenCounts(e.ctx, "s1", sessiondb.TokenUpdate{Input: 10, Output: 4, EstimatedCostUSD: f64(0.1)}))
		noErr(t, "ClearMessages", e.s.ClearMessages(e.ctx, "s1"))
		s := e.get("s1")
		if s.MessageCount != 0 || s.ToolCallCount != 0 {
			t.Errorf("message_count/tool_call_count = %d/%d, want 0/0", s.MessageCount, s.ToolCallCount)
		}
		if s.InputTokens != 10 || s.OutputTokens != 4 {
			t.Errorf("tokens = %d/%d, want kept 10/4", s.InputTokens, s.OutputTokens)
		}
		checkFloat(t, "estimated_cost_usd", s.EstimatedCostUSD, f64(0.1))
		if ms := e.messages("s1"); len(ms) != 0 {
			t.Errorf("%d messages left", len(ms))
		}
		if got := hitIDs(e.search("zebra", sessiondb.SearchFilter{})); !reflect.DeepEqual(got, []int64{keep}) {
			t.Errorf("search after clear = %v, want only %d", got, keep)
		}
		if n, _ := e.s.MessageCount(e.ctx, "s2"); n != 1 {
			t.Errorf("other session lost messages: %d", n)
		}
		e.msg("s1", "user", "again")
		if s := e.get("s1"); s.MessageCount != 1 {
			t.Errorf("message_count after a new append = %d, want 1", s.MessageCount)
		}
	})

	t.Run("Delete", func(t *testing.T) { testDelete(t, h) })
}

func testDelete(t *testing.T, h Harness) {
	cases := []struct {
		name     string
		id       string
		want     bool
		gone     string
		orphans  []string
		parents  map[string]string
		msgsLeft int64
	}{
		{name: "missing", id: "ghost", want: false, parents: map[string]string{"c1": "p", "c2": "p", "g": "c1"}, msgsLeft: 4},
		{name: "parent orphans children", id: "p", want: true, gone: "p", orphans: []string{"c1", "c2"}, parents: map[string]string{"g": "c1"}, msgsLeft: 2},
		{name: "middle orphans its child", id: "c1", want: true, gone: "c1", orphans: []string{"g"}, parents: map[string]string{"c2": "p"}, msgsLeft: 3},
		{name: "leaf", id: "g", want: true, gone: "g", parents: map[string]string{"c1": "p", "c2": "p"}, msgsLeft: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			e.create("p", "cli")
			e.child("c1", "p")
			e.child("c2", "p")
			e.child("g", "c1")
			e.msg("p", "user", "parrot one")
			e.msg("p", "assistant", "parrot two")
			e.msg("c1", "user", "parrot three")
			e.msg("g", "user", "parrot four")
			got, err := e.s.DeleteSession(e.ctx, tc.id)
			noErr(t, "DeleteSession", err)
			if want := []string{tc.id}; tc.want && !slices.Equal(got, want) || !tc.want && len(got) != 0 {
				t.Errorf("DeleteSession(%q) = %v, want deleted %v", tc.id, got, tc.want)
			}
			if tc.gone != "" {
				if _, err := e.s.GetSession(e.ctx, tc.gone); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
					t.Errorf("deleted session still readable (err %v)", err)
				}
				if n, _ := e.s.MessageCount(e.ctx, tc.gone); n != 0 {
					t.Errorf("deleted session keeps %d messages", n)
				}
				for _, hit := range e.search("parrot", sessiondb.SearchFilter{}) {
					if hit.SessionID == tc.gone {
						t.Errorf("search still finds message %d of the deleted session", hit.ID)
					}
				}
			}
			e.checkParents(t, tc.orphans, tc.parents)
			if n, _ := e.s.MessageCount(e.ctx, ""); n != tc.msgsLeft {
				t.Errorf("%d messages left, want %d", n, tc.msgsLeft)
			}
			if n := int64(len(e.search("parrot", sessiondb.SearchFilter{}))); n != tc.msgsLeft {
				t.Errorf("search finds %d messages, want %d", n, tc.msgsLeft)
			}
		})
	}
}

// testPrune covers PruneSessions.
func testPrune(t *testing.T, h Harness) {
	const day = 24 * time.Hour
	type sess struct {
		id, source, parent string
		ageDays            float64 // started this many days before "now"
		endAgeDays         float64 // ended this many days before now; < 0 = open
		msgs               int
	}
	cases := []struct {
		name     string
		sessions []sess
		days     float64
		source   string
		want     int
		left     []string
		orphans  []string
		parents  map[string]string
	}{
		{name: "ended old only", days: 90, sessions: []sess{
			{id: "old-ended", ageDays: 100, endAgeDays: 99, msgs: 2},
			{id: "old-open", ageDays: 100, endAgeDays: -1, msgs: 1},
			{id: "new-ended", ageDays: 10, endAgeDays: 9, msgs: 1},
		}, want: 1, left: []string{"new-ended", "old-open"}},
		{name: "age from start not end", days: 90, sessions: []sess{
			{id: "long", ageDays: 100, endAgeDays: 1},
		}, want: 1, left: []string{}},
		{name: "boundary is kept", days: 90, sessions: []sess{
			{id: "edge", ageDays: 90, endAgeDays: 1},
			{id: "past", ageDays: 90.001, endAgeDays: 1},
		}, want: 1, left: []string{"edge"}},
		{name: "fractional days", days: 0.5, sessions: []sess{
			{id: "13h", ageDays: 13.0 / 24, endAgeDays: 0.1},
			{id: "11h", ageDays: 11.0 / 24, endAgeDays: 0.1},
		}, want: 1, left: []string{"11h"}},
		{name: "chain with two old links", days: 90, sessions: []sess{
			{id: "A", ageDays: 200, endAgeDays: 199},
			{id: "B", parent: "A", ageDays: 150, endAgeDays: 149},
			{id: "C", parent: "B", ageDays: 20, endAgeDays: 19},
			{id: "D", parent: "C", ageDays: 10, endAgeDays: 9},
		}, want: 2, left: []string{"C", "D"}, orphans: []string{"C"}, parents: map[string]string{"D": "C"}},
		{name: "all-old chain goes whole", days: 90, sessions: []sess{
			{id: "A", ageDays: 400, endAgeDays: 399, msgs: 1},
			{id: "B", parent: "A", ageDays: 300, endAgeDays: 299, msgs: 1},
			{id: "C", parent: "B", ageDays: 200, endAgeDays: 199, msgs: 1},
			{id: "D", parent: "C", ageDays: 100, endAgeDays: 99, msgs: 1},
		}, want: 4, left: []string{}},
		{name: "open old child keeps living as an orphan", days: 90, sessions: []sess{
			{id: "P", ageDays: 200, endAgeDays: 199},
			{id: "Q", parent: "P", ageDays: 150, endAgeDays: -1},
		}, want: 1, left: []string{"Q"}, orphans: []string{"Q"}},
		{name: "source filter", days: 90, source: "cli", sessions: []sess{
			{id: "cli-old", source: "cli", ageDays: 100, endAgeDays: 99, msgs: 1},
			{id: "tg-old", source: "telegram", ageDays: 100, endAgeDays: 99, msgs: 1},
		}, want: 1, left: []string{"tg-old"}},
		{name: "nothing to prune", days: 90, sessions: []sess{
			{id: "fresh", ageDays: 1, endAgeDays: 0.5},
		}, want: 0, left: []string{"fresh"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			now := e.clock.Now()
			at := func(days float64) time.Time { return now.Add(-time.Duration(days * float64(day))) }
			// Create in start order, ending each at its time.
			ordered := append([]sess(nil), tc.sessions...)
			sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].ageDays > ordered[j].ageDays })
			wantMsgs := int64(0)
			for _, s := range ordered {
				e.clock.Set(at(s.ageDays))
				src := s.source
				if src == "" {
					src = "cli"
				}
				_, err := e.s.CreateSession(e.ctx, sessiondb.NewSession{ID: s.id, Source: src, ParentSessionID: s.parent})
				noErr(t, "CreateSession", err)
				for i := 0; i < s.msgs; i++ {
					e.msg(s.id, "user", fmt.Sprintf("pelican %s %d", s.id, i))
				}
			}
			for _, s := range ordered {
				if s.endAgeDays >= 0 {
					e.clock.Set(at(s.endAgeDays))
					noErr(t, "EndSession", e.s.EndSession(e.ctx, s.id, "user_exit"))
				}
			}
			e.clock.Set(now)
			n, err := e.s.PruneSessions(e.ctx, tc.days, tc.source)
			noErr(t, "PruneSessions", err)
			if n != tc.want {
				t.Errorf("PruneSessions = %d, want %d", n, tc.want)
			}
			left, err := e.s.SearchSessions(e.ctx, "", 100, 0)
			noErr(t, "SearchSessions", err)
			if got := sorted(ids(left)); !reflect.DeepEqual(got, sorted(tc.left)) {
				t.Errorf("sessions left %v, want %v", got, sorted(tc.left))
			}
			for _, s := range tc.sessions {
				for _, l := range tc.left {
					if l == s.id {
						wantMsgs += int64(s.msgs)
					}
				}
			}
			if got, _ := e.s.MessageCount(e.ctx, ""); got != wantMsgs {
				t.Errorf("%d messages left, want %d (pruned sessions' messages deleted)", got, wantMsgs)
			}
			if got := int64(len(e.search("pelican", sessiondb.SearchFilter{Limit: 100}))); got != wantMsgs {
				t.Errorf("search finds %d messages, want %d", got, wantMsgs)
			}
			e.checkParents(t, tc.orphans, tc.parents)
		})
	}
}

// checkParents checks that each of orphans has lost its parent (NULL, as
// deleting or pruning a parent leaves it) and each key of parents has the
// parent named.
func (e *env) checkParents(t *testing.T, orphans []string, parents map[string]string) {
	t.Helper()
	for _, id := range orphans {
		if p := e.get(id).ParentSessionID; p != nil {
			t.Errorf("%s parent = %s, want NULL (orphaned)", id, *p)
		}
	}
	for id, want := range parents {
		if p := deref(e.get(id).ParentSessionID); p != want {
			t.Errorf("%s parent = %s, want %s", id, p, want)
		}
	}
}
