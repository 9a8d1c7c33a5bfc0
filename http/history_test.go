package http_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
)

type listAnswer struct {
	Sessions []sessiondb.RichSession `json:"sessions"`
	Next     string                  `json:"next"`
}

func ids(rs []sessiondb.RichSession) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestStatusOfEveryCode(t *testing.T) {
	for code, want := range map[string]int{
		sessiondb.EINVALID: 400, "unauthorized": 401, "forbidden": 403, sessiondb.ENOTFOUND: 404,
		sessiondb.ECONFLICT: 409, sessiondb.EBUSY: 503, sessiondb.EINTERNAL: 500, "": 500,
	} {
		if got := sdbhttp.StatusOf(code); got != want {
			t.Errorf("StatusOf(%q) = %d, want %d", code, got, want)
		}
	}
}

// Errors from the store reach the client with their code and the status
// the code maps to; parameters are checked by name.
func TestErrorMapping(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("abc1", "cli", "m")
	f.session("abc2", "cli", "m")
	f.session("other", "cli", "m")
	f.do("PATCH", "/api/v1/sessions/other", `{"title":"taken"}`, auth...).ok(t, nil)
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown session", "GET", "/api/v1/sessions/nope", "", 404, "not_found"},
		{"ambiguous prefix", "GET", "/api/v1/sessions/abc", "", 409, "conflict"},
		{"bad limit", "GET", "/api/v1/sessions?limit=0", "", 400, "invalid"},
		{"bad sort", "GET", "/api/v1/sessions?sort=size", "", 400, "invalid"},
		{"bad cursor", "GET", "/api/v1/sessions?cursor=%21%21", "", 400, "invalid"},
		{"bad time", "GET", "/api/v1/sessions?from=yesterday", "", 400, "invalid"},
		{"bad after", "GET", "/api/v1/sessions/abc1/messages?after=-3", "", 400, "invalid"},
		{"title taken", "PATCH", "/api/v1/sessions/abc1", `{"title":"taken"}`, 409, "conflict"},
		{"unknown field", "PATCH", "/api/v1/sessions/abc1", `{"name":"x"}`, 400, "invalid"},
		{"not JSON", "PATCH", "/api/v1/sessions/abc1", `title=x`, 400, "invalid"},
		{"delete by prefix", "DELETE", "/api/v1/sessions/abc", "", 404, "not_found"},
		{"prune without days", "POST", "/api/v1/prune", `{}`, 400, "invalid"},
		{"unknown route", "GET", "/api/v1/nothing", "", 404, "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.do(c.method, c.path, c.body, auth...).apiError(t, c.status, c.code)
		})
	}
	msg := f.get("/api/v1/sessions?limit=0").apiError(t, 400, "invalid")
	if want := "limit"; !strings.Contains(msg, want) {
		t.Errorf("message %q does not name %q", msg, want)
	}
}

func TestListSessionsFiltersAndSorts(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("a-cli", "cli", "gpt")
	f.session("b-tg", "telegram", "claude")
	f.session("c-cli", "cli", "claude")
	f.st.SetSessionTitle(ctxb, "b-tg", "Docker Compose fix")
	cost := 2.5
	f.st.UpdateTokenCounts(ctxb, "a-cli", sessiondb.TokenUpdate{Input: 500, EstimatedCostUSD: &cost})
	f.st.UpdateTokenCounts(ctxb, "c-cli", sessiondb.TokenUpdate{Input: 900, Output: 10})
	f.msg("a-cli", "user", "latest activity")

	list := func(q string) []string {
		var a listAnswer
		f.get("/api/v1/sessions?"+q).ok(t, &a)
		return ids(a.Sessions)
	}
	for q, want := range map[string][]string{
		"":                 {"c-cli", "b-tg", "a-cli"},
		"order=asc":        {"a-cli", "b-tg", "c-cli"},
		"source=cli":       {"c-cli", "a-cli"},
		"model=claude":     {"c-cli", "b-tg"},
		"q=docker":         {"b-tg"},
		"q=tg":             {"b-tg"},
		"sort=cost":        {"a-cli", "c-cli", "b-tg"},
		"sort=tokens":      {"c-cli", "a-cli", "b-tg"},
		"sort=last_active": {"a-cli", "c-cli", "b-tg"},
		"from=" + epoch(f, 1) + "&to=" + epoch(f, 2): {"b-tg"},
	} {
		if got := list(q); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("?%s: %v, want %v", q, got, want)
		}
	}
}

// epoch is the started_at of the nth fixture session (one a minute from
// the fixture's start), as a query value.
func epoch(f *fixture, n int) string {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute)
	return url.QueryEscape(start.Format(time.RFC3339))
}

// Walking the pages while sessions are added between requests sees every
// session that existed at the start exactly once.
func TestListSessionsCursorUnderAppends(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	want := map[string]bool{}
	for i := range 23 {
		id := fmt.Sprintf("s%02d", i)
		f.session(id, "cli", "m")
		want[id] = true
	}
	seen := map[string]int{}
	cursor := ""
	for page := 0; ; page++ {
		var a listAnswer
		f.get("/api/v1/sessions?limit=5&cursor="+url.QueryEscape(cursor)).ok(t, &a)
		for _, id := range ids(a.Sessions) {
			seen[id]++
		}
		// New sessions (newer than all) and messages arrive meanwhile.
		f.session(fmt.Sprintf("new%02d", page), "cli", "m")
		f.msg("s00", "user", "more")
		if a.Next == "" {
			break
		}
		cursor = a.Next
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("session %s seen %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("session %s repeated (%d)", id, n)
		}
	}
	// A cursor is valid only for the listing it came from.
	var a listAnswer
	f.get("/api/v1/sessions?limit=2").ok(t, &a)
	f.get("/api/v1/sessions?limit=2&sort=cost&cursor="+url.QueryEscape(a.Next)).apiError(t, 400, "invalid")
	f.get("/api/v1/sessions?limit=2&source=tui&cursor="+url.QueryEscape(a.Next)).apiError(t, 400, "invalid")
}

func TestGetSession(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("20260301_abcdef", "cli", "gpt")
	var s sessiondb.Session
	f.get("/api/v1/sessions/20260301_ab").ok(t, &s)
	if s.ID != "20260301_abcdef" || s.Source != "cli" || *s.Model != "gpt" {
		t.Fatalf("got %+v", s)
	}
}

type msgAnswer struct {
	SessionID string              `json:"session_id"`
	Messages  []sessiondb.Message `json:"messages"`
	HasBefore bool                `json:"has_before"`
	HasAfter  bool                `json:"has_after"`
	Before    int64               `json:"before"`
	After     int64               `json:"after"`
}

// Pages cover the transcript in order, never split a tool call from its
// result, and keep up with messages appended between requests.
func TestMessagePages(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("s", "cli", "m")
	var all []int64
	for i := range 4 {
		all = append(all, f.msg("s", "user", fmt.Sprintf("q%d", i)))
		a, r := f.toolCall("s", fmt.Sprintf("call%d", i), "shell", "out")
		all = append(all, a, r)
	}
	var got []int64
	var first msgAnswer
	f.get("/api/v1/sessions/s/messages?limit=2").ok(t, &first)
	if first.HasBefore || !first.HasAfter || first.Messages[0].ID != all[0] {
		t.Fatalf("first page %+v", first)
	}
	page := first
	for {
		for i, m := range page.Messages {
			got = append(got, m.ID)
			if m.Role == "assistant" && len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && i == len(page.Messages)-1 {
				t.Fatalf("page ends on a tool call without its result: %+v", page.Messages)
			}
		}
		if !page.HasAfter {
			break
		}
		next := msgAnswer{}
		f.get(fmt.Sprintf("/api/v1/sessions/s/messages?limit=2&after=%d", page.After)).ok(t, &next)
		if len(got) == 3 {
			all = append(all, f.msg("s", "user", "appended meanwhile"))
		}
		page = next
	}
	if fmt.Sprint(got) != fmt.Sprint(all) {
		t.Fatalf("pages gave %v, want %v", got, all)
	}
	var end msgAnswer
	f.get("/api/v1/sessions/s/messages?from=end&limit=1").ok(t, &end)
	if len(end.Messages) != 1 || end.Messages[0].ID != all[len(all)-1] || end.HasAfter || !end.HasBefore {
		t.Fatalf("from=end: %+v", end)
	}
	var back msgAnswer
	f.get(fmt.Sprintf("/api/v1/sessions/s/messages?limit=1&before=%d", all[3])).ok(t, &back)
	if len(back.Messages) != 2 || back.Messages[0].ID != all[1] {
		t.Fatalf("a page ending on a tool result grows back to its call: %+v", back.Messages)
	}
	if r := f.get("/api/v1/sessions/s/messages?limit=501"); r.status != http.StatusBadRequest {
		t.Fatalf("limit 501: %d", r.status)
	}
}

// Every session id has a path that reaches it (SessionPath): "." and ".."
// (which URL parsers fold away) in their escaped form, and the ids that
// form could be mistaken for keep their own.
func TestSessionPathReachesEveryID(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	ids := []string{".", "..", "~.", "~..", "~~.", "~", "~x", "x~.", "a/b", "%2e", ".x", "..."}
	for _, id := range ids {
		f.session(id, "cli", "m")
	}
	for _, id := range ids {
		var got struct{ ID string }
		f.get("/api/v1/sessions/"+sdbhttp.SessionPath(id), auth...).ok(t, &got)
		if got.ID != id {
			t.Errorf("GET /api/v1/sessions/%s answers session %q, want %q", sdbhttp.SessionPath(id), got.ID, id)
		}
	}
	f.do("DELETE", "/api/v1/sessions/"+sdbhttp.SessionPath(".."), "", auth...).ok(t, nil)
	if _, err := f.st.GetSession(ctxb, ".."); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("session .. after its DELETE: %v", err)
	}
	if _, err := f.st.GetSession(ctxb, "~.."); err != nil {
		t.Errorf("session ~.. after the DELETE of ..: %v", err)
	}
}
