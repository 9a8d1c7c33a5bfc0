package storetest

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// toolSession builds a session whose messages are numbered 1…n in content
// ("m1", "m2", …) and returns their ids by number (index 0 unused). Spec:
// "a" = assistant with tool calls (the ids given), "t:<id>" = tool result,
// "u" = user, "r" = plain assistant reply.
func (e *env) toolSession(id string, spec []string) []int64 {
	e.t.Helper()
	out := []int64{0}
	for i, s := range spec {
		content := fmt.Sprintf("m%d", i+1)
		m := sessiondb.NewMessage{SessionID: id, Content: &content}
		switch {
		case s == "u":
			m.Role = "user"
		case s == "r":
			m.Role = "assistant"
		case len(s) > 2 && s[:2] == "a:":
			m.Role = "assistant"
			var calls []any
			for _, c := range strings.Split(s[2:], ",") {
				calls = append(calls, map[string]any{"id": c, "type": "function", "function": map[string]any{"name": "terminal", "arguments": "{}"}})
			}
			m.ToolCalls = calls
		case len(s) > 2 && s[:2] == "t:":
			m.Role = "tool"
			m.ToolCallID = str(s[2:])
			m.ToolName = str("terminal")
		default:
			e.t.Fatalf("bad message spec %q", s)
		}
		out = append(out, e.append(m))
	}
	return out
}

// contents returns the contents of ms.
func contents(ms []sessiondb.Message) []string {
	return pluck(ms, func(m sessiondb.Message) string { return deref(m.Content) })
}

func numbered(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("m%d", i))
	}
	return out
}

// forkSpec is the source conversation of the fork and paging tests:
// m2 calls c1 and c2, answered by m3 and m4; m7 calls c3, never answered;
// m9 calls c4 and c5, only c4 answered (m10).
var forkSpec = []string{"u", "a:c1,c2", "t:c1", "t:c2", "r", "u", "a:c3", "u", "a:c4,c5", "t:c4", "u", "r"}

// testFork covers ForkSession (IMP-11).
func testFork(t *testing.T, h Harness) {
	cases := []struct {
		name       string
		at         int // message number to fork at
		want       []string
		wantCalls  int64
		noConfig   bool // source has no model_config
		wantConfig map[string]any
	}{
		{name: "first message", at: 1, want: numbered(1, 1), wantCalls: 0},
		{name: "assistant with calls extends to its results", at: 2, want: numbered(1, 4), wantCalls: 2},
		{name: "first result extends to the last", at: 3, want: numbered(1, 4), wantCalls: 2},
		{name: "last result", at: 4, want: numbered(1, 4), wantCalls: 2},
		{name: "plain reply", at: 5, want: numbered(1, 5), wantCalls: 2},
		{name: "unanswered call cuts before the assistant row", at: 7, want: numbered(1, 6), wantCalls: 2},
		{name: "partly answered call cuts before the assistant row", at: 9, want: numbered(1, 8), wantCalls: 3},
		{name: "cut inside a partly answered group", at: 10, want: numbered(1, 8), wantCalls: 3},
		{name: "whole conversation", at: 12, want: numbered(1, 12), wantCalls: 5},
		{name: "source without model_config", at: 1, noConfig: true, want: numbered(1, 1), wantConfig: map[string]any{"_branched_from": "src"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			ns := sessiondb.NewSession{ID: "src", Source: "cli", Model: "m1", ModelConfig: map[string]any{"temperature": 0.5}}
			if tc.noConfig {
				ns.ModelConfig = nil
			}
			e.createWith(ns)
			ids := e.toolSession("src", forkSpec)
			srcBefore := e.get("src")
			srcMsgs := e.messages("src")

			got, err := e.s.ForkSession(e.ctx, "src", ids[tc.at], sessiondb.NewSession{ID: "fork", Source: "cli"})
			noErr(t, "ForkSession", err)
			if got != "fork" {
				t.Errorf("ForkSession returned %q, want fork", got)
			}
			child := e.get("fork")
			if deref(child.ParentSessionID) != "src" {
				t.Errorf("parent_session_id = %s, want src", deref(child.ParentSessionID))
			}
			wantConfig := tc.wantConfig
			if wantConfig == nil {
				wantConfig = map[string]any{"temperature": 0.5, "_branched_from": "src"}
			}
			if child.ModelConfig == nil || !reflect.DeepEqual(jsonText(t, *child.ModelConfig), wantConfig) {
				t.Errorf("model_config = %s, want %v", deref(child.ModelConfig), wantConfig)
			}
			ms := e.messages("fork")
			if got := contents(ms); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("forked messages %v, want %v", got, tc.want)
			}
			if child.MessageCount != int64(len(tc.want)) || child.ToolCallCount != tc.wantCalls {
				t.Errorf("message_count/tool_call_count = %d/%d, want %d/%d", child.MessageCount, child.ToolCallCount, len(tc.want), tc.wantCalls)
			}
			for i, m := range ms {
				o := srcMsgs[i]
				if m.SessionID != "fork" || m.ID == o.ID {
					t.Errorf("message %d: session %q id %d, want a copy in fork", i, m.SessionID, m.ID)
				}
				m.ID, m.SessionID = o.ID, o.SessionID
				if !reflect.DeepEqual(normJSON(t, m), normJSON(t, o)) {
					t.Errorf("copy %d = %+v\nwant     %+v (all fields, timestamp kept)", i, m, o)
				}
			}
			if after := e.get("src"); !reflect.DeepEqual(after, srcBefore) || len(e.messages("src")) != len(srcMsgs) {
				t.Errorf("source changed by the fork: %+v", after)
			}
		})
	}
	t.Run("unknown source", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("src", "cli")
		id := e.msg("src", "user", "x")
		if _, err := e.s.ForkSession(e.ctx, "ghost", id, sessiondb.NewSession{ID: "fork", Source: "cli"}); err == nil {
			t.Error("ForkSession of an unknown session succeeded")
		}
		if _, err := e.s.GetSession(e.ctx, "fork"); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			t.Errorf("a failed fork left a session behind (err %v)", err)
		}
	})
}

// testPaging covers GetMessagesPage and GetMessagesAsConversation's lastN
// (IMP-12).
func testPaging(t *testing.T, h Harness) {
	// m2 calls c1, c2 (results m3, m4); m8 calls c3 (result m9).
	spec := []string{"u", "a:c1,c2", "t:c1", "t:c2", "r", "u", "u", "a:c3", "t:c3", "r", "u", "r"}
	e := newEnv(t, h)
	e.create("p", "cli")
	n := e.toolSession("p", spec)
	cases := []struct {
		name              string
		page              func() sessiondb.Page
		want              []string
		hasBefore, hasAft bool
	}{
		{name: "newest page", page: func() sessiondb.Page { return sessiondb.Page{Limit: 3} }, want: numbered(10, 12), hasBefore: true},
		{name: "default limit holds all", page: func() sessiondb.Page { return sessiondb.Page{} }, want: numbered(1, 12)},
		{name: "before cursor", page: func() sessiondb.Page { return sessiondb.Page{BeforeID: n[8], Limit: 2} }, want: numbered(6, 7), hasBefore: true, hasAft: true},
		{name: "after cursor", page: func() sessiondb.Page { return sessiondb.Page{AfterID: n[4], Limit: 3} }, want: numbered(5, 7), hasBefore: true, hasAft: true},
		{name: "after cursor to the end", page: func() sessiondb.Page { return sessiondb.Page{AfterID: n[10], Limit: 5} }, want: numbered(11, 12), hasBefore: true},
		{name: "before the first", page: func() sessiondb.Page { return sessiondb.Page{BeforeID: n[1], Limit: 5} }, want: []string{}, hasAft: true},
		{name: "after the last", page: func() sessiondb.Page { return sessiondb.Page{AfterID: n[12], Limit: 5} }, want: []string{}, hasBefore: true},
		{name: "newest page grows to keep a group", page: func() sessiondb.Page { return sessiondb.Page{Limit: 4} }, want: numbered(8, 12), hasBefore: true},
		{name: "before page grows back to the assistant", page: func() sessiondb.Page { return sessiondb.Page{BeforeID: n[5], Limit: 1} }, want: numbered(2, 4), hasBefore: true, hasAft: true},
		{name: "before page holding part of a group", page: func() sessiondb.Page { return sessiondb.Page{BeforeID: n[6], Limit: 3} }, want: numbered(2, 5), hasBefore: true, hasAft: true},
		{name: "after page grows to the last result", page: func() sessiondb.Page { return sessiondb.Page{AfterID: n[1], Limit: 2} }, want: numbered(2, 4), hasBefore: true, hasAft: true},
		{name: "after page ending on the assistant", page: func() sessiondb.Page { return sessiondb.Page{AfterID: n[6], Limit: 2} }, want: numbered(7, 9), hasBefore: true, hasAft: true},
		{name: "from the start", page: func() sessiondb.Page { return sessiondb.Page{FromStart: true, Limit: 3} }, want: numbered(1, 4), hasAft: true},
		{name: "from the start, all", page: func() sessiondb.Page { return sessiondb.Page{FromStart: true} }, want: numbered(1, 12)},
		{name: "from the start with a before cursor", page: func() sessiondb.Page { return sessiondb.Page{FromStart: true, BeforeID: n[7], Limit: 2} }, want: numbered(5, 6), hasBefore: true, hasAft: true},
		{name: "page that already holds whole groups", page: func() sessiondb.Page { return sessiondb.Page{BeforeID: n[10], Limit: 3} }, want: numbered(7, 9), hasBefore: true, hasAft: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := e.s.GetMessagesPage(e.ctx, "p", tc.page())
			noErr(t, "GetMessagesPage", err)
			if got := contents(p.Messages); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("page %v, want %v", got, tc.want)
			}
			if p.HasBefore != tc.hasBefore || p.HasAfter != tc.hasAft {
				t.Errorf("has_before/has_after = %v/%v, want %v/%v", p.HasBefore, p.HasAfter, tc.hasBefore, tc.hasAft)
			}
			for i := 1; i < len(p.Messages); i++ {
				if p.Messages[i].ID <= p.Messages[i-1].ID {
					t.Errorf("page not in id order: %v", msgIDs(p.Messages))
				}
			}
		})
	}
	t.Run("walking back covers everything once", func(t *testing.T) {
		var all []string
		pg := sessiondb.Page{Limit: 2}
		for i := 0; i < 20; i++ {
			p, err := e.s.GetMessagesPage(e.ctx, "p", pg)
			noErr(t, "GetMessagesPage", err)
			all = append(contents(p.Messages), all...)
			if !p.HasBefore || len(p.Messages) == 0 {
				break
			}
			pg.BeforeID = p.Messages[0].ID
		}
		if !reflect.DeepEqual(all, numbered(1, 12)) {
			t.Errorf("pages joined = %v, want every message once", all)
		}
	})
	t.Run("default limit is 50", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("q", "cli")
		var plain []string
		for i := 0; i < 55; i++ {
			plain = append(plain, "u")
		}
		e.toolSession("q", plain)
		p, err := e.s.GetMessagesPage(e.ctx, "q", sessiondb.Page{})
		noErr(t, "GetMessagesPage", err)
		if got := contents(p.Messages); !reflect.DeepEqual(got, numbered(6, 55)) || !p.HasBefore || p.HasAfter {
			t.Errorf("page %v (before %v after %v), want the newest 50 m6…m55", got, p.HasBefore, p.HasAfter)
		}
	})
	t.Run("LastN", func(t *testing.T) {
		cases := []struct {
			name  string
			lastN int
			want  []string
		}{
			{"all", 0, numbered(1, 12)},
			{"more than there are", 50, numbered(1, 12)},
			{"last two", 2, numbered(11, 12)},
			{"grows to keep a group", 4, numbered(8, 12)},
			{"grows back to the first group", 9, numbered(2, 12)},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				conv, err := e.s.GetMessagesAsConversation(e.ctx, "p", tc.lastN)
				noErr(t, "GetMessagesAsConversation", err)
				var got []string
				for _, c := range conv {
					s, _ := c["content"].(string)
					got = append(got, s)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("lastN %d gave %v, want %v", tc.lastN, got, tc.want)
				}
			})
		}
	})
}

// testConcurrency appends from many goroutines at once: every call returns
// its own id and the counters come out exact.
func testConcurrency(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.create("a", "cli")
	e.create("b", "cli")
	const workers, each = 8, 25
	var wg sync.WaitGroup
	idsCh := make(chan int64, workers*each)
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			sid := []string{"a", "b"}[w%2]
			for i := 0; i < each; i++ {
				c := fmt.Sprintf("w%d-%d", w, i)
				id, err := e.s.AppendMessage(e.ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: &c, ToolCalls: []any{"x"}})
				if err != nil {
					errs <- err
					continue
				}
				idsCh <- id
				if _, err := e.s.GetMessages(e.ctx, sid); err != nil {
					errs <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(idsCh)
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call: %v", err)
	}
	seen := map[int64]bool{}
	for id := range idsCh {
		if seen[id] {
			t.Errorf("id %d returned twice", id)
		}
		seen[id] = true
	}
	for _, sid := range []string{"a", "b"} {
		s := e.get(sid)
		want := int64(workers / 2 * each)
		if s.MessageCount != want || s.ToolCallCount != want || int64(len(e.messages(sid))) != want {
			t.Errorf("%s: message_count %d tool_call_count %d rows %d, want %d each", sid, s.MessageCount, s.ToolCallCount, len(e.messages(sid)), want)
		}
	}
}
