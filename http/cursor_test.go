package http_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
)

// walkPages follows a listing's cursor from its first page to its last.
// Before each next page it calls between with the ids the page showed
// (rows are written there, as other clients would). It fails the test on
// a page that does not end.
func walkPages(t *testing.T, page func(cursor string) (ids []string, next string), between func(pageIDs []string)) map[string]int {
	t.Helper()
	seen := map[string]int{}
	cursor := ""
	for n := 0; ; n++ {
		if n > 100 {
			t.Fatal("the listing does not end")
		}
		ids, next := page(cursor)
		for _, id := range ids {
			seen[id]++
		}
		if next == "" {
			return seen
		}
		between(ids)
		cursor = next
	}
}

// pager pages through the listing at path (its filters and limit) by its
// next_cursor, reading the ids of the rows under key.
func (f *fixture) pager(path, key string) func(cursor string) ([]string, string) {
	return func(cursor string) ([]string, string) {
		rows, next := f.listing(path+"&cursor="+url.QueryEscape(cursor), key)
		var ids []string
		for _, r := range rows {
			id, _ := r["id"].(string)
			ids = append(ids, id)
		}
		return ids, next
	}
}

// checkOnce fails for every id of want not seen exactly once, for every
// id seen twice, and for every id of gone seen at all.
func checkOnce(t *testing.T, label string, seen map[string]int, want []string, gone map[string]bool) {
	t.Helper()
	for _, id := range want {
		if !gone[id] && seen[id] != 1 {
			t.Errorf("%s: %s seen %d times, want once", label, id, seen[id])
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("%s: %s repeated (%d times)", label, id, n)
		}
		if gone[id] {
			t.Errorf("%s: %s listed after it was deleted", label, id)
		}
	}
}

// Every sort and order of the session list pages by keyset: while
// sessions are created, messages appended and a session deleted between
// page requests, every session there at the start (and not deleted) is
// listed exactly once. Sort keys tie (equal costs and tokens, no cost at
// all) across page boundaries.
func TestListSessionsCursorEverySortUnderWrites(t *testing.T) {
	for _, sort := range []string{"started", "last_active", "cost", "tokens"} {
		for _, order := range []string{"desc", "asc"} {
			t.Run(sort+"-"+order, func(t *testing.T) {
				f := newFixture(t, sdbhttp.Config{})
				var initial []string
				for i := range 15 {
					id := fmt.Sprintf("s%02d", i)
					f.session(id, "cli", "m")
					u := sessiondb.TokenUpdate{Input: int64(i%5) * 100}
					if i%4 != 0 {
						u.EstimatedCostUSD = ptr(float64(i % 3))
					}
					if err := f.st.UpdateTokenCounts(ctxb, id, u); err != nil {
						t.Fatal(err)
					}
					f.msg(id, "user", "hello")
					initial = append(initial, id)
				}
				// The session the whole listing shows last is deleted
				// after the first page.
				var whole listAnswer
				f.get("/api/v1/sessions?limit=100&sort="+sort+"&order="+order).ok(t, &whole)
				if len(whole.Sessions) != 15 {
					t.Fatalf("whole listing: %v", ids(whole.Sessions))
				}
				doomed := whole.Sessions[14].ID
				gone := map[string]bool{}
				seenSoFar := map[string]bool{}
				n := 0
				seen := walkPages(t, func(cursor string) ([]string, string) {
					var a listAnswer
					f.get("/api/v1/sessions?limit=4&sort="+sort+"&order="+order+"&cursor="+url.QueryEscape(cursor)).ok(t, &a)
					return ids(a.Sessions), a.Next
				}, func(page []string) {
					for _, id := range page {
						seenSoFar[id] = true
					}
					// A new session with a message, and messages appended
					// to sessions already there.
					n++
					fresh := fmt.Sprintf("new%02d", n)
					f.session(fresh, "cli", "m")
					f.msg(fresh, "user", "new")
					for _, id := range initial {
						if gone[id] {
							continue
						}
						// Appending changes a session's last activity: under
						// that sort a session moves, as it should, so there
						// only those already listed get messages (newest
						// first, they move behind the cursor). Under the
						// other sorts an append changes no key.
						if sort == "last_active" && (order == "asc" || !seenSoFar[id]) {
							continue
						}
						f.msg(id, "assistant", "more")
					}
					if !gone[doomed] {
						if _, err := f.st.DeleteSession(ctxb, doomed); err != nil {
							t.Fatal(err)
						}
						gone[doomed] = true
					}
				})
				checkOnce(t, sort+" "+order, seen, initial, gone)
			})
		}
	}
}

// The registry's session listing pages newest first by keyset: sessions
// resolved between page requests neither repeat nor push others out.
func TestRegistrySessionsCursorUnderWrites(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	reg := f.registry()
	if _, err := reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: "ag1", Name: "Helper", Folder: "helper"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.CreateMessagingGroup(ctxb, sessiondb.NewMessagingGroup{ID: "mg1", ChannelType: "slack", PlatformID: "C1", Name: "ops"}); err != nil {
		t.Fatal(err)
	}
	thread := 0
	resolve := func() string {
		t.Helper()
		thread++
		s, created, err := reg.ResolveSession(ctxb, sessiondb.SessionLookup{AgentGroupID: "ag1", MessagingGroupID: "mg1",
			ThreadID: fmt.Sprintf("17%02d.0001", thread), Mode: sessiondb.ModePerThread})
		if err != nil || !created {
			t.Fatalf("resolve thread %d: created %v, %v", thread, created, err)
		}
		// Half the sessions share a creation time: the id breaks the tie.
		if thread%2 == 0 {
			f.clock.Advance(time.Second)
		}
		return s.ID
	}
	var initial []string
	for range 11 {
		initial = append(initial, resolve())
	}
	f.serve(sdbhttp.Config{Registry: reg})
	seen := walkPages(t, f.pager("/api/v1/registry/sessions?agent_group=ag1&limit=3", "sessions"), func([]string) { resolve(); resolve() })
	checkOnce(t, "registry sessions", seen, initial, nil)
	f.get("/api/v1/registry/sessions?cursor=nonsense").apiError(t, 400, "invalid")
}

// The subagent listing: a record read whole by id, and pages (newest
// update first) that neither repeat nor lose a record while others are
// created between requests.
func TestSubagentsListAndCursorUnderWrites(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	sub := f.subagents()
	n := 0
	ensure := func(channel string) sessiondb.Subagent {
		t.Helper()
		n++
		s, created, err := sub.EnsureSubagent(ctxb, channel, fmt.Sprintf("1712.%04d", n), "/sessions")
		if err != nil || !created {
			t.Fatalf("ensure %d: created %v, %v", n, created, err)
		}
		if n%2 == 0 {
			f.clock.Advance(time.Second)
		}
		return s
	}
	var initial []string
	for i := range 9 {
		initial = append(initial, ensure(fmt.Sprintf("C%d", i%2)).ID)
	}
	f.serve(sdbhttp.Config{Subagents: sub})

	var one sessiondb.Subagent
	f.get("/api/v1/subagents/"+url.PathEscape(initial[2])).ok(t, &one)
	if one.ID != initial[2] || one.ChannelID != "C0" || one.ThreadTS != "1712.0003" || one.Status != sessiondb.SubagentIdle {
		t.Fatalf("subagent %+v", one)
	}
	var c1 sessiondb.SubagentPage
	f.get("/api/v1/subagents?channel=C1&limit=100").ok(t, &c1)
	if len(c1.Subagents) != 4 || c1.NextCursor != "" {
		t.Fatalf("channel C1: %+v", c1)
	}
	for _, s := range c1.Subagents {
		if s.ChannelID != "C1" {
			t.Errorf("channel filter lists %+v", s)
		}
	}

	seen := walkPages(t, f.pager("/api/v1/subagents?limit=2", "subagents"), func([]string) { ensure("C9") })
	checkOnce(t, "subagents", seen, initial, nil)
	f.get("/api/v1/subagents?cursor=nonsense").apiError(t, 400, "invalid")
	f.get("/api/v1/subagents?limit=0").apiError(t, 400, "invalid")
}
