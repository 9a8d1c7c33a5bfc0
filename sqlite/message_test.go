package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// Content is stored faithfully: NUL bytes, invalid UTF-8 and very large
// text read back byte for byte.
func TestContentStoredFaithfully(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "a", "cli")
	cases := []struct {
		name    string
		content string
	}{
		{"empty", ""},
		{"NUL inside", "before\x00after"},
		{"structured prefix", "\x00json:{\"a\":1}"},
		{"invalid UTF-8", "bad \xff\xfe bytes \xc3"},
		{"emoji and CJK", "🚀 大别山 ünïcödé"},
		{"10 MB", strings.Repeat("0123456789abcdef", 10<<20/16)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: str(tc.content)})
			ms, err := s.GetMessages(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			last := ms[len(ms)-1]
			if last.ID != id || last.Content == nil || *last.Content != tc.content {
				got := "<nil>"
				if last.Content != nil {
					got = *last.Content
				}
				if len(got) > 80 {
					got = got[:80] + "..."
				}
				t.Errorf("read back %q (len %d); want len %d", got, len(got), len(tc.content))
			}
		})
	}
	if err := s.FTSIntegrityCheck(ctx); err != nil {
		t.Errorf("FTS integrity after odd content: %v", err)
	}
	if res, err := s.IntegrityCheck(ctx); err != nil || len(res) != 1 || res[0] != "ok" {
		t.Errorf("integrity = %v, %v", res, err)
	}
}

func TestAppendBadInput(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "a", "cli")
	cases := []struct {
		name string
		m    sessiondb.NewMessage
		want string // part of the message
	}{
		{"unknown session", sessiondb.NewMessage{SessionID: "nope", Role: "user"}, "nope"},
		{"no session", sessiondb.NewMessage{Role: "user"}, "session id"},
		{"no role", sessiondb.NewMessage{SessionID: "a"}, "role"},
		{"unencodable tool calls", sessiondb.NewMessage{SessionID: "a", Role: "assistant", ToolCalls: func() {}}, "tool_calls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.AppendMessage(ctx, tc.m)
			if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want invalid mentioning %q", err, tc.want)
			}
		})
	}
	x, err := s.GetSession(ctx, "a")
	if err != nil || x.MessageCount != 0 {
		t.Errorf("failed appends changed the counters: %+v %v", x, err)
	}
}

// Concurrent appends share commits and every one lands exactly once.
func TestConcurrentAppendsAllLand(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "a", "cli")
	const n = 16 * 25
	errs := make(chan error, n)
	for g := 0; g < 16; g++ {
		go func() {
			for i := 0; i < 25; i++ {
				_, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: str("x"), ToolCalls: []any{1}})
				errs <- err
			}
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	x, err := s.GetSession(ctx, "a")
	if err != nil || x.MessageCount != n || x.ToolCallCount != n {
		t.Fatalf("counts %d/%d, %v; want %d", x.MessageCount, x.ToolCallCount, err, n)
	}
	if c, _ := s.MessageCount(ctx, "a"); c != n {
		t.Errorf("rows %d; want %d", c, n)
	}
}

// Every 50 committed writes a PASSIVE checkpoint runs off the hot path.
func TestBackgroundCheckpoints(t *testing.T) {
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "a", "cli")
	for i := 0; i < 120; i++ {
		mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: str("x")})
	}
	s.ckptWG.Wait()
	// Creating the schema at open was the first write.
	if got := s.writes.Load(); got != 122 {
		t.Errorf("writes counted = %d; want 122", got)
	}
	if s.ckptRuns.Load() < 1 {
		t.Error("no background checkpoint ran after 121 writes")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestMessagesPageCursors(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "a", "cli")
	// u1 a2(calls c1,c2) t3 t4 u5 r6 u7 r8
	var ids []int64
	add := func(m sessiondb.NewMessage) { m.SessionID = "a"; ids = append(ids, mustAppend(t, s, m)) }
	add(sessiondb.NewMessage{Role: "user", Content: str("1")})
	add(sessiondb.NewMessage{Role: "assistant", Content: str("2"), ToolCalls: []any{map[string]any{"id": "c1"}, map[string]any{"id": "c2"}}})
	add(sessiondb.NewMessage{Role: "tool", Content: str("3"), ToolCallID: str("c1")})
	add(sessiondb.NewMessage{Role: "tool", Content: str("4"), ToolCallID: str("c2")})
	for _, c := range []string{"5", "6", "7", "8"} {
		role := "user"
		if c == "6" || c == "8" {
			role = "assistant"
		}
		add(sessiondb.NewMessage{Role: role, Content: str(c)})
	}
	cases := []struct {
		name                string
		p                   sessiondb.Page
		want                string
		hasBefore, hasAfter bool
	}{
		{"newest", sessiondb.Page{Limit: 3}, "678", true, false},
		{"before grows back over a tool group", sessiondb.Page{BeforeID: ids[4], Limit: 1}, "234", true, true},
		{"after grows over the results", sessiondb.Page{AfterID: ids[0], Limit: 1}, "234", true, true},
		{"after the last is empty", sessiondb.Page{AfterID: ids[7]}, "", true, false},
		{"before the first is empty", sessiondb.Page{BeforeID: ids[0]}, "", false, true},
		{"between cursors", sessiondb.Page{AfterID: ids[3], BeforeID: ids[7]}, "567", true, true},
		{"whole", sessiondb.Page{Limit: 100}, "12345678", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pg, err := s.GetMessagesPage(ctx, "a", tc.p)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, m := range pg.Messages {
				got += *m.Content
			}
			if got != tc.want || pg.HasBefore != tc.hasBefore || pg.HasAfter != tc.hasAfter {
				t.Errorf("page %q before=%v after=%v; want %q %v %v", got, pg.HasBefore, pg.HasAfter, tc.want, tc.hasBefore, tc.hasAfter)
			}
		})
	}
	if _, err := s.GetMessagesPage(ctx, "a", sessiondb.Page{Limit: -1}); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("negative limit = %v; want invalid", err)
	}
}

func TestCallsAfterCloseFailCleanly(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "a", "cli")
	s.Close()
	cases := []struct {
		name string
		do   func() error
	}{
		{"append", func() error {
			_, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "a", Role: "user"})
			return err
		}},
		{"get", func() error { _, err := s.GetSession(ctx, "a"); return err }},
		{"search", func() error { _, err := s.SearchMessages(ctx, "x", sessiondb.SearchFilter{}); return err }},
		{"create", func() error { _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "b", Source: "cli"}); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); err == nil {
				t.Error("succeeded on a closed store")
			}
		})
	}
}
