package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/postgres"
)

// TestContentKeptExactly: text PostgreSQL cannot hold as text (NUL bytes,
// such as newer Hermes' "\x00json:" structured content, and invalid UTF-8)
// comes back byte for byte, is still found by its words, and survives an
// export and import.
func TestContentKeptExactly(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, postgres.Options{})
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "a", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	contents := []string{"\x00json:{\"type\":\"image\",\"caption\":\"zebra\"}", "bad \xff\xfe bytes zebra", "plain zebra"}
	for _, c := range contents {
		c := c
		if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: &c}); err != nil {
			t.Fatalf("AppendMessage(%q): %v", c, err)
		}
	}
	check := func(st sessiondb.Store, sid string, contents []string) {
		t.Helper()
		ms, err := st.GetMessages(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, *m.Content)
		}
		if !reflect.DeepEqual(got, contents) {
			t.Errorf("contents = %q, want %q", got, contents)
		}
		if raw, ok := ms[0].StructuredContent(); !ok || !strings.Contains(string(raw), "zebra") {
			t.Errorf("structured content not readable: %q %v", raw, ok)
		}
		hits, err := st.SearchMessages(ctx, "zebra", sessiondb.SearchFilter{})
		n := 0
		for _, h := range hits {
			if h.SessionID == sid {
				n++
			}
		}
		if err != nil || n != 3 {
			t.Errorf("search zebra: %d hits in %s, %v; want 3", n, sid, err)
		}
	}
	check(s, "a", contents)
	rec, err := s.ExportSession(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// A copy (the record handed over as it is) keeps every byte; the
	// structured content is stored as Hermes stores it (PythonJSON).
	hermesForm := "\x00json:{\"type\": \"image\", \"caption\": \"zebra\"}"
	rec["id"] = "b"
	if r, err := s.ImportSession(ctx, rec, sessiondb.ImportOptions{}); err != nil || !r.Imported {
		t.Fatalf("ImportSession = %+v, %v", r, err)
	}
	check(s, "b", []string{hermesForm, contents[1], contents[2]})
	// An export is JSON, which carries NUL (as \u0000) but not invalid
	// UTF-8: encoding/json writes U+FFFD for it, on every backend.
	var line bytes.Buffer
	w := bufio.NewWriter(&line)
	rec["id"] = "c"
	if err := sessiondb.WriteExport(w, rec); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	back, err := sessiondb.DecodeRecord(line.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.ImportSession(ctx, back, sessiondb.ImportOptions{}); err != nil || !r.Imported {
		t.Fatalf("ImportSession = %+v, %v", r, err)
	}
	check(s, "c", []string{hermesForm, "bad \uFFFD\uFFFD bytes zebra", contents[2]})

	// Other columns refuse such text, naming the field.
	bad := "x\x00y"
	_, err = s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "a", Role: "tool", ToolName: &bad})
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "tool_name") {
		t.Errorf("AppendMessage with a NUL in tool_name = %v, want invalid naming tool_name", err)
	}
}

// TestWaitForMessages: a waiter on one Store learns of an append made
// through another (another process, as far as the server can tell), and
// stops when its context ends.
func TestWaitForMessages(t *testing.T) {
	ctx := context.Background()
	a, url := openStore(t, postgres.Options{})
	b, err := postgres.Open(ctx, url, postgres.Options{Schema: a.Schema(), MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	first, err := b.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: strp("one")})
	if err != nil {
		t.Fatal(err)
	}
	// A message already there returns at once.
	if got, err := a.WaitForMessages(ctx, "s", 0); err != nil || got != first {
		t.Fatalf("WaitForMessages(after 0) = %d, %v; want %d", got, err, first)
	}
	type result struct {
		id  int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		id, err := a.WaitForMessages(ctx, "s", first)
		done <- result{id, err}
	}()
	// Appends to another session do not wake it for good.
	if _, err := b.CreateSession(ctx, sessiondb.NewSession{ID: "other", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "other", Role: "user", Content: strp("elsewhere")}); err != nil {
		t.Fatal(err)
	}
	second, err := b.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "assistant", Content: strp("two")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.id != second {
			t.Fatalf("WaitForMessages = %d, %v; want %d", r.id, r.err, second)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter never learned of the append")
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := a.WaitForMessages(cctx, "s", second)
		done <- result{0, err}
	}()
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) || sessiondb.ErrorCode(r.err) != sessiondb.EBUSY {
		t.Errorf("cancelled wait = %v, want context.Canceled with code busy", r.err)
	}
}

// TestConcurrentMigration: stores opening one fresh schema at the same
// moment migrate it once; every one of them works.
func TestConcurrentMigration(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	const n = 6
	errs := make(chan error, n)
	stores := make(chan *postgres.Store, n)
	for i := 0; i < n; i++ {
		go func() {
			s, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema, MaxConns: 2})
			errs <- err
			stores <- s
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Open: %v", err)
		}
		if s := <-stores; s != nil {
			if _, err := s.SessionCount(context.Background(), ""); err != nil {
				t.Errorf("SessionCount: %v", err)
			}
			s.Close()
		}
	}
	steps := pgtest.Count(t, pgtest.WithSearchPath(url, schema), "SELECT count(*) FROM sessiondb_migrations")
	if steps != postgres.SchemaVersion() {
		t.Errorf("ledger holds %d steps, want %d (each applied once)", steps, postgres.SchemaVersion())
	}
}

func strp(s string) *string { return &s }
