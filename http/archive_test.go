package http_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// hermes21Store opens a copy of the schema-21 fixture Hermes wrote.
func hermes21Store(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(ctxb, hermes21Copy(t), sqlite.Options{})
	return testkit.Opened(t, st, err)
}

// hermes21Copy copies the schema-21 fixture into a temporary folder and
// returns the copy's path.
func hermes21Copy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "sqlite", "testdata", "hermes21", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// listed returns the ids of the sessions /api/v1/sessions lists with the
// query q, children included.
func (f *fixture) listed(q string) []string {
	f.t.Helper()
	rows, _ := f.listing("/api/v1/sessions?children=1&limit=100"+q, "sessions")
	var ids []string
	for _, r := range rows {
		ids = append(ids, r["id"].(string))
	}
	sort.Strings(ids)
	return ids
}

// POST /api/v1/sessions/{id}/archive and /unarchive set Hermes' archived
// flag on the session's compression lineage, behind the write guard; a
// schema-6 store, which has no such column, refuses them.
func TestArchiveRoutes(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.serve(sdbhttp.Config{History: hermes21Store(t), Token: testToken})
	lineage := []string{"h21-lineage-mid", "h21-lineage-root", "h21-lineage-tip"}
	f.do("POST", "/api/v1/sessions/h21-lineage-mid/archive", "").apiError(t, 401, "unauthorized")
	var a struct {
		ID       string
		Archived bool
		Sessions int
	}
	f.do("POST", "/api/v1/sessions/h21-lineage-mid/archive", "", auth...).ok(t, &a)
	if a.ID != "h21-lineage-mid" || !a.Archived || a.Sessions != 3 {
		t.Fatalf("archive answered %+v, want the lineage's 3 sessions", a)
	}
	for _, id := range lineage {
		if slices.Contains(f.listed(""), id) || !slices.Contains(f.listed("&archived=1"), id) {
			t.Errorf("%s after the archive: listed %v, with archived %v", id, f.listed(""), f.listed("&archived=1"))
		}
	}
	f.do("POST", "/api/v1/sessions/h21-lineage-tip/unarchive", "", auth...).ok(t, &a)
	if a.Archived || a.Sessions != 3 {
		t.Fatalf("unarchive answered %+v", a)
	}
	for _, id := range lineage {
		if !slices.Contains(f.listed(""), id) {
			t.Errorf("%s not listed after the unarchive: %v", id, f.listed(""))
		}
	}
	f.do("POST", "/api/v1/sessions/h21-lineage/archive", "", auth...).apiError(t, 404, "not_found")

	var del struct {
		Deleted   string
		Delegates []string
	}
	f.do("DELETE", "/api/v1/sessions/h21-main", "", auth...).ok(t, &del)
	if del.Deleted != "h21-main" || !slices.Equal(del.Delegates, []string{"h21-delegate", "h21-delegate-nested"}) {
		t.Errorf("delete answered %+v, want h21-main with its two delegates", del)
	}

	v6 := newFixture(t, sdbhttp.Config{Token: testToken})
	v6.session("s", "cli", "m")
	v6.do("POST", "/api/v1/sessions/s/archive", "", auth...).apiError(t, 400, "invalid")
	v6.serveReadOnly()
	v6.do("POST", "/api/v1/sessions/s/archive", "", auth...).apiError(t, 404, "not_found")
}

// GET /api/v1/sessions lists what Hermes lists (branches shown, delegates
// not) and takes the newer filters: archived_only, cwd and min_messages;
// a bad count is refused naming it.
func TestSessionsNewerFilters(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.serve(sdbhttp.Config{History: hermes21Store(t)})
	ids := func(q string) []string {
		rows, _ := f.listing("/api/v1/sessions?limit=100"+q, "sessions")
		out := []string{}
		for _, r := range rows {
			out = append(out, r["id"].(string))
		}
		sort.Strings(out)
		return out
	}
	all := ids("")
	if !slices.Contains(all, "h21-branch") || !slices.Contains(all, "h21-branch-legacy") || slices.Contains(all, "h21-orphan-delegate") || slices.Contains(all, "h21-delegate") {
		t.Errorf("listing %v: want the branches, no delegate", all)
	}
	if got := ids("&archived_only=1"); !slices.Equal(got, []string{"h21-archived-tip"}) {
		t.Errorf("archived_only: %v", got)
	}
	if got := ids("&cwd=" + url.QueryEscape("/home/dev/project/api")); !slices.Equal(got, []string{"h21-compacted"}) {
		t.Errorf("cwd: %v", got)
	}
	if got := ids("&min_messages=4"); len(got) == 0 || len(got) >= len(all) || slices.Contains(got, "h21-cjk") {
		t.Errorf("min_messages=4: %v of %v", got, all)
	}
	if msg := f.get("/api/v1/sessions?min_messages=-2").apiError(t, 400, "invalid"); !strings.Contains(msg, "min_messages") {
		t.Errorf("min_messages=-2: %q does not name the parameter", msg)
	}
}

// The web list shows what Hermes lists, names each child's kind, and has
// the newer filters in its form, filled in from the query.
func TestUIListNewerFilters(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.serve(sdbhttp.Config{History: hermes21Store(t)})
	row := func(html, id string) string {
		_, after, ok := strings.Cut(html, `data-session="`+id+`"`)
		if !ok {
			return ""
		}
		r, _, _ := strings.Cut(after, "</tr>")
		return r
	}
	html := f.page("/", 200)
	if r := row(html, "h21-branch"); !strings.Contains(r, "· branch") {
		t.Errorf("the marked branch's row does not say branch: %q", r)
	}
	if r := row(html, "h21-branch-legacy"); !strings.Contains(r, "· branch") {
		t.Errorf("the older Hermes' branch's row does not say branch: %q", r)
	}
	if row(html, "h21-orphan-delegate") != "" || row(html, "h21-delegate") != "" {
		t.Error("the list shows a delegate")
	}
	html = f.page("/?children=true", 200)
	if r := row(html, "h21-delegate"); !strings.Contains(r, "· delegate") {
		t.Errorf("with children, the delegate's row does not say delegate: %q", r)
	}
	html = f.page("/?cwd="+url.QueryEscape("/home/dev/project/api")+"&min_messages=2", 200)
	if row(html, "h21-compacted") == "" || row(html, "h21-main") != "" {
		t.Error("cwd filter: want h21-compacted alone")
	}
	if !strings.Contains(html, `name="cwd" value="/home/dev/project/api"`) || !strings.Contains(html, `name="min_messages" min="0" value="2"`) {
		t.Error("the form does not keep the cwd and min_messages given")
	}
	if html := f.page("/?archived_only=true", 200); row(html, "h21-archived-tip") == "" || row(html, "h21-main") != "" {
		t.Error("archived_only: want the archived session alone")
	}
}
