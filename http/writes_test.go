package http_test

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Each write does what it says and answers the result; the token comes
// as a bearer header from a client that sends no Origin.
func TestWrites(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("old", "cli", "m")
	f.session("keep", "telegram", "m")
	f.session("gone", "cli", "m")
	f.msg("gone", "user", "bye")

	var s sessiondb.Session
	f.do("PATCH", "/api/v1/sessions/keep", `{"title":"  Deploy  notes "}`, auth...).ok(t, &s)
	if s.Title == nil || *s.Title != "Deploy notes" {
		t.Fatalf("title %v", s.Title)
	}
	f.do("PATCH", "/api/v1/sessions/keep", `{"title":""}`, auth...).ok(t, &s)
	if s.Title != nil {
		t.Fatalf("cleared title %v", *s.Title)
	}
	f.do("POST", "/api/v1/sessions/keep/end", `{"reason":"done\u001b[2J"}`, auth...).apiError(t, 400, "invalid")
	f.do("POST", "/api/v1/sessions/keep/end", `{"reason":"done"}`, auth...).ok(t, &s)
	if s.EndedAt == nil || *s.EndReason != "done" {
		t.Fatalf("end %+v", s)
	}
	f.do("POST", "/api/v1/sessions/keep/reopen", "", auth...).ok(t, &s)
	if s.EndedAt != nil || s.EndReason != nil {
		t.Fatalf("reopen %+v", s)
	}
	var del struct{ Deleted string }
	f.do("DELETE", "/api/v1/sessions/gone", "", auth...).ok(t, &del)
	if del.Deleted != "gone" {
		t.Fatalf("delete %+v", del)
	}
	f.get("/api/v1/sessions/gone").apiError(t, 404, "not_found")
	f.do("DELETE", "/api/v1/sessions/gone", "", auth...).apiError(t, 404, "not_found")

	// Prune: "old" ended and 10 days old goes; "keep" (open) stays.
	f.do("POST", "/api/v1/sessions/old/end", "", auth...).ok(t, nil)
	f.clock.Advance(10 * 24 * 3600e9)
	var pr struct{ Pruned int }
	f.do("POST", "/api/v1/prune", `{"older_than_days":7}`, auth...).ok(t, &pr)
	if pr.Pruned != 1 {
		t.Fatalf("pruned %d", pr.Pruned)
	}
	f.get("/api/v1/sessions/old").apiError(t, 404, "not_found")
	f.get("/api/v1/sessions/keep").ok(t, nil)
	f.do("POST", "/api/v1/prune", `{"older_than_days":-1}`, auth...).apiError(t, 400, "invalid")
	f.do("POST", "/api/v1/prune", `{"older_than_days":7}{}`, auth...).apiError(t, 400, "invalid")
	f.do("PATCH", "/api/v1/sessions/keep", `{"title":"`+string(bytes.Repeat([]byte("x"), 2<<20))+`"}`, auth...).apiError(t, 400, "invalid")
}

// /healthz says whether the store answers; /metrics counts requests by
// route pattern and status, with latency histograms.
func TestHealthAndRequestMetrics(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("s", "cli", "m")
	f.get("/healthz").ok(t, nil)
	f.get("/api/v1/sessions/s").ok(t, nil)
	f.get("/api/v1/sessions/nope").apiError(t, 404, "not_found")
	body := f.get("/metrics").body
	for _, want := range []string{
		`sessiondb_http_requests_total{code="200",method="GET",route="GET /api/v1/sessions/{id}"} 1`,
		`sessiondb_http_requests_total{code="404",method="GET",route="GET /api/v1/sessions/{id}"} 1`,
		`sessiondb_http_request_duration_seconds_count{method="GET",route="GET /api/v1/sessions/{id}"} 2`,
		`sessiondb_http_requests_total{code="200",method="GET",route="/healthz"} 1`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "sessiondb_http_requests_total"))
		}
	}
	f.st.Close()
	if r := f.get("/healthz"); r.status != 503 {
		t.Fatalf("/healthz on a closed store: %d %s", r.status, r.body)
	}
}

// A client chooses the method of its request, any token it likes: the
// metrics count made-up methods under one label, "other", instead of a
// series each (the registry keeps every series for ever).
func TestMetricsMethodLabelIsBounded(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	for i := range 40 {
		f.do(fmt.Sprintf("MADEUP%d", i), "/api/v1/nope", "")
		f.do(fmt.Sprintf("PROBE%d", i), "/", "")
	}
	f.get("/api/v1/nope")
	body := f.get("/metrics").body
	methods := map[string]bool{}
	for _, m := range regexp.MustCompile(`sessiondb_http_requests_total\{[^}]*method="([^"]*)"`).FindAllSubmatch(body, -1) {
		methods[string(m[1])] = true
	}
	if len(methods) != 2 || !methods["GET"] || !methods["other"] {
		t.Errorf("method labels %v, want GET and other", slices.Sorted(maps.Keys(methods)))
	}
	for _, want := range []string{
		`sessiondb_http_requests_total{code="404",method="other",route="other"} 40`,
		`sessiondb_http_requests_total{code="404",method="other",route="/"} 40`,
		`sessiondb_http_requests_total{code="404",method="GET",route="other"} 1`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "sessiondb_http_requests_total"))
		}
	}
}

// A write that cannot have the store's write lock in time answers 503
// busy with Retry-After; once the lock is free the same write lands. A
// store that fails (closed under the server) answers 500 internal.
func TestBusyAndInternalErrors(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("s1", "cli", "m")
	st, err := sqlite.Open(ctxb, f.path, sqlite.Options{WriteBudget: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f.serve(sdbhttp.Config{History: st, Token: testToken})

	// Another connection, as another process would, holds the write lock.
	db, err := sqlitedb.Open(sqlitedb.Config{Path: f.path, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctxb)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctxb, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	r := f.do("PATCH", "/api/v1/sessions/s1", `{"title":"busy"}`, auth...)
	r.apiError(t, 503, "busy")
	if r.header.Get("Retry-After") != "1" {
		t.Errorf("busy answer without Retry-After: %v", r.header)
	}
	if _, err := conn.ExecContext(ctxb, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	var s sessiondb.Session
	f.do("PATCH", "/api/v1/sessions/s1", `{"title":"free"}`, auth...).ok(t, &s)
	if s.Title == nil || *s.Title != "free" {
		t.Fatalf("title after the lock was freed: %+v", s)
	}

	st.Close()
	f.get("/api/v1/sessions").apiError(t, 500, "internal")
	f.get("/api/v1/sessions/s1/messages").apiError(t, 500, "internal")
}
