package http_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
)

func TestSearch(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("a", "cli", "m")
	f.msg("a", "user", "how do I restart docker")
	f.msg("a", "assistant", "run systemctl restart docker")
	f.session("b", "telegram", "m")
	f.msg("b", "user", "docker compose is slow")
	var ans struct {
		Query string
		Hits  []sessiondb.SearchHit
		Next  int
	}
	f.get("/api/v1/search?q=docker").ok(t, &ans)
	if len(ans.Hits) != 3 || ans.Next != 0 {
		t.Fatalf("hits %+v", ans)
	}
	for _, h := range ans.Hits {
		if !strings.Contains(h.Snippet, ">>>docker<<<") || len(h.Context) == 0 {
			t.Errorf("hit without a marked snippet or context: %+v", h)
		}
	}
	f.get("/api/v1/search?q=docker&source=telegram").ok(t, &ans)
	if len(ans.Hits) != 1 || ans.Hits[0].SessionID != "b" {
		t.Fatalf("source filter: %+v", ans.Hits)
	}
	f.get("/api/v1/search?q=docker&limit=2").ok(t, &ans)
	if len(ans.Hits) != 2 || ans.Next != 2 {
		t.Fatalf("first page: %d hits, next %d", len(ans.Hits), ans.Next)
	}
	f.get("/api/v1/search?q=docker&limit=2&offset=2").ok(t, &ans)
	if len(ans.Hits) != 1 {
		t.Fatalf("second page: %+v", ans.Hits)
	}
	f.get("/api/v1/search?q=").apiError(t, 400, "invalid")
	f.get("/api/v1/search?q=x&limit=101").apiError(t, 400, "invalid")
	// Every search is counted in the metrics.
	m := f.get("/metrics")
	if !bytes.Contains(m.body, []byte("sessiondb_searches_total 4")) {
		t.Errorf("searches not counted:\n%s", grepLines(m.body, "sessiondb_searches"))
	}
}

func grepLines(b []byte, sub string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestLineage(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("root", "cli", "m")
	for _, c := range []struct{ id, parent string }{{"cont", "root"}, {"fork", "root"}, {"grand", "cont"}} {
		if _, err := f.st.CreateSession(ctxb, sessiondb.NewSession{ID: c.id, Source: "cli", ParentSessionID: c.parent}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(60e9)
	}
	var n sessiondb.LineageNode
	f.get("/api/v1/sessions/cont/lineage").ok(t, &n)
	if n.ID != "root" || len(n.Children) != 1 || n.Children[0].ID != "cont" || !n.Children[0].Selected ||
		len(n.Children[0].Children) != 1 || n.Children[0].Children[0].ID != "grand" {
		b, _ := json.Marshal(n)
		t.Fatalf("tree %s", b)
	}
	f.get("/api/v1/sessions/none/lineage").apiError(t, 404, "not_found")
}

func TestUsage(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("a", "cli", "gpt")
	f.session("b", "telegram", "claude")
	f.st.UpdateTokenCounts(ctxb, "a", sessiondb.TokenUpdate{Input: 10, EstimatedCostUSD: ptr(1.5)})
	f.st.UpdateTokenCounts(ctxb, "b", sessiondb.TokenUpdate{Input: 20, EstimatedCostUSD: ptr(0.5)})
	var rep sessiondb.UsageReport
	f.get("/api/v1/usage").ok(t, &rep)
	if len(rep.ByModel) != 2 || rep.ByModel[0].Key != "gpt" || len(rep.BySource) != 2 ||
		len(rep.ByDay) != 1 || rep.ByDay[0].Key != "2026-03-01" || rep.ByDay[0].InputTokens != 30 || len(rep.Top) != 2 || rep.Top[0].Key != "a" {
		t.Fatalf("report %+v", rep)
	}
	f.get("/api/v1/usage?source=telegram&top=0").ok(t, &rep)
	if len(rep.BySource) != 1 || rep.BySource[0].Key != "telegram" || len(rep.Top) != 0 {
		t.Fatalf("filtered report %+v", rep)
	}
	f.get("/api/v1/usage?since=never").apiError(t, 400, "invalid")
}

func TestExport(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("a", "cli", "m")
	f.msg("a", "user", "one")
	f.toolCall("a", "c1", "shell", "ok")
	f.session("b", "telegram", "m")
	f.msg("b", "user", "two")
	if _, err := f.st.CreateSession(ctxb, sessiondb.NewSession{ID: "a-child", Source: "cli", ParentSessionID: "a"}); err != nil {
		t.Fatal(err)
	}
	lines := func(path string) []map[string]any {
		r := f.get(path)
		r.ok(t, nil)
		if r.header.Get("Content-Type") != "application/x-ndjson" || !strings.Contains(r.header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("%s: headers %v", path, r.header)
		}
		var out []map[string]any
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
			}
			out = append(out, m)
		}
		return out
	}
	one := lines("/api/v1/sessions/a/export")
	if len(one) != 1 || one[0]["id"] != "a" || len(one[0]["messages"].([]any)) != 3 {
		t.Fatalf("one session: %v", one)
	}
	all := lines("/api/v1/export")
	var got []string
	for _, m := range all {
		got = append(got, m["id"].(string))
	}
	if strings.Join(got, ",") != "a-child,b,a" {
		t.Fatalf("export of everything: %v", got)
	}
	cli := lines("/api/v1/export?source=cli&order=asc")
	if len(cli) != 2 || cli[0]["id"] != "a" || cli[1]["id"] != "a-child" {
		t.Fatalf("export of a filter: %v", cli)
	}
	f.get("/api/v1/export?sort=nope").apiError(t, 400, "invalid")
	f.get("/api/v1/sessions/zzz/export").apiError(t, 404, "not_found")
}
