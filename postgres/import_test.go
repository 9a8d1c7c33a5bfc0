package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
)

// TestImportCopiesMessages: an imported session whose messages carry their
// ids goes in by COPY, not one INSERT a message, and keeps its ids, its
// content (a NUL-bearing one too) and the id sequence past them; a session
// with a taken id falls back to the rows one by one and gives that message
// a new id.
func TestImportCopiesMessages(t *testing.T) {
	s, rec, _ := openTraced(t, 2)
	ctx := context.Background()
	const n = 40
	msgs := make([]any, n)
	for i := range msgs {
		content := "message " + itoa(i)
		if i == 7 {
			content = "\x00json:[{\"type\":\"text\",\"text\":\"parts\"}]"
		}
		msgs[i] = map[string]any{"id": float64(1000 + i), "role": "user", "content": content, "timestamp": 1000.0 + float64(i)}
	}
	rec.start()
	if _, err := s.ImportSession(ctx, map[string]any{"id": "c1", "source": "cli", "started_at": 1000.0, "messages": msgs}, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	inserts := 0
	for _, q := range rec.stop() {
		if strings.HasPrefix(q.sql, "INSERT INTO messages") {
			inserts++
		}
	}
	if inserts != 0 {
		t.Errorf("%d INSERTs into messages for a session whose %d messages carry their ids; want them copied", inserts, n)
	}
	got, err := s.GetMessages(ctx, "c1")
	if err != nil || len(got) != n {
		t.Fatalf("GetMessages = %d, %v", len(got), err)
	}
	for i, m := range got {
		if m.ID != int64(1000+i) {
			t.Errorf("message %d has id %d, want %d", i, m.ID, 1000+i)
		}
	}
	if raw, ok := got[7].StructuredContent(); !ok || !strings.Contains(string(raw), "parts") {
		t.Errorf("the multimodal message came back as %q", *got[7].Content)
	}
	next, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "c1", Role: "user", Content: strPtr("after")})
	if err != nil || next <= 1000+n-1 {
		t.Errorf("the next append took id %d (%v); want one past the copied ids", next, err)
	}

	// A taken id: the copy is rolled back and the rows go in one by one.
	taken := []any{
		map[string]any{"id": float64(1003), "role": "user", "content": "holds a taken id", "timestamp": 2000.0},
		map[string]any{"id": float64(5000), "role": "assistant", "content": "free id", "timestamp": 2001.0},
	}
	if _, err := s.ImportSession(ctx, map[string]any{"id": "c2", "source": "cli", "started_at": 2000.0, "messages": taken}, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetMessages(ctx, "c2")
	if err != nil || len(got) != 2 || got[0].ID == 1003 || got[1].ID <= got[0].ID || *got[0].Content != "holds a taken id" {
		t.Errorf("c2's messages = %+v, %v; want new ids for the taken one and the one after it, in order", got, err)
	}
}

// TestPoolSize: the pool holds DefaultMaxConns connections unless the URL's
// pool_max_conns or Options.MaxConns says otherwise, Options first.
func TestPoolSize(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	ctx := context.Background()
	for _, tc := range []struct {
		url  string
		opt  int32
		want int32
	}{
		{url, 0, DefaultMaxConns},
		{url + "&pool_max_conns=3", 0, 3},
		{url + "&pool_max_conns=3", 5, 5},
	} {
		s, err := Open(ctx, tc.url, Options{Schema: schema, MaxConns: tc.opt})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.pool.Config().MaxConns; got != tc.want {
			t.Errorf("%s, MaxConns %d: pool of %d, want %d", tc.url, tc.opt, got, tc.want)
		}
		s.Close()
	}
}

// TestImportBatchInAFewRoundTrips: a batch of sessions goes in with a
// handful of round trips in all, not a few a session, and stores what the
// session-by-session path stores: the messages in order (their ids kept,
// or new ones in the batch's order), the parents (earlier in the batch,
// later in it, already stored, or missing until a later import), the
// usage rows, a taken id skipped, and the id sequence past every id.
func TestImportBatchInAFewRoundTrips(t *testing.T) {
	for _, withIDs := range []bool{true, false} {
		t.Run(map[bool]string{true: "kept ids", false: "new ids"}[withIDs], func(t *testing.T) {
			s, rec, _ := openTraced(t, 2)
			ctx := context.Background()
			for _, id := range []string{"p0", "old"} {
				if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
					t.Fatal(err)
				}
			}
			parents := map[string]string{"b00": "b05", "b06": "b01", "b07": "p0", "b08": "nowhere"}
			var recs []map[string]any
			for i := range 30 {
				id := "b" + pad2(i)
				if i == 12 {
					id = "old"
				}
				var msgs []any
				for j := range 5 {
					m := map[string]any{"role": "user", "content": id + " says " + itoa(j), "timestamp": 1000.0 + float64(i*10+j)}
					if j == 2 {
						m["tool_calls"] = []any{map[string]any{"id": "c"}} // another set of columns
					}
					if withIDs {
						m["id"] = float64(10_000 + i*10 + j)
					}
					msgs = append(msgs, m)
				}
				r := map[string]any{"id": id, "source": "cli", "started_at": 1000.0 + float64(i), "messages": msgs}
				if p := parents[id]; p != "" {
					r["parent_session_id"] = p
				}
				if i == 3 {
					r[sessiondb.UsageKey] = []any{map[string]any{"model": "m", "billing_provider": "x", "input_tokens": 7.0, "api_call_count": 1.0}}
				}
				recs = append(recs, r)
			}
			rec.start()
			results, err := s.ImportSessions(ctx, recs, sessiondb.ImportOptions{})
			trips := rec.roundTrips()
			if err != nil {
				t.Fatal(err)
			}
			if trips > 12 {
				t.Errorf("a batch of %d sessions took %d round trips; want a handful", len(recs), trips)
			}
			for i, r := range results {
				if r.Imported != (i != 12) {
					t.Errorf("session %d imported = %v", i, r.Imported)
				}
			}
			if len(results) != len(recs) {
				t.Fatalf("%d results for %d records", len(results), len(recs))
			}
			last := int64(0)
			for i := range 30 {
				id := "b" + pad2(i)
				if i == 12 {
					continue
				}
				got, err := s.GetMessages(ctx, id)
				if err != nil || len(got) != 5 {
					t.Fatalf("%s: %d messages, %v", id, len(got), err)
				}
				for j, m := range got {
					if *m.Content != id+" says "+itoa(j) {
						t.Errorf("%s message %d = %q", id, j, *m.Content)
					}
					if withIDs && m.ID != int64(10_000+i*10+j) {
						t.Errorf("%s message %d has id %d, want its own %d", id, j, m.ID, 10_000+i*10+j)
					}
					if !withIDs && m.ID <= last {
						t.Errorf("%s message %d has id %d, not after %d: the batch's order is lost", id, j, m.ID, last)
					}
					last = m.ID
				}
				sess, err := s.GetSession(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				want := parents[id]
				if want == "nowhere" {
					want = ""
				}
				if got := deref(sess.ParentSessionID); got != want {
					t.Errorf("%s has parent %q, want %q", id, got, want)
				}
			}
			var rows, tokens int64
			if err := s.pool.QueryRow(ctx, "SELECT count(*), coalesce(sum(input_tokens), 0) FROM session_model_usage WHERE session_id = 'b03'").Scan(&rows, &tokens); err != nil || rows != 1 || tokens != 7 {
				t.Errorf("b03's usage: %d rows, %d input tokens (%v); want 1, 7", rows, tokens, err)
			}
			if _, err := s.ImportSessions(ctx, []map[string]any{{"id": "nowhere", "source": "cli", "started_at": 900.0}, {"id": "z", "source": "cli", "started_at": 901.0}}, sessiondb.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			if sess, err := s.GetSession(ctx, "b08"); err != nil || deref(sess.ParentSessionID) != "nowhere" {
				t.Errorf("b08 after its parent's import: %+v, %v; want its parent linked", sess, err)
			}
			next, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "b01", Role: "user", Content: strPtr("after")})
			if err != nil || next <= last {
				t.Errorf("the next append took id %d (%v); want one past %d", next, err, last)
			}
		})
	}
}

// TestImportedIDOneMovesAFreshSequence: a message imported with id 1 into
// a store no id has been taken from moves the sequence past it, so the
// next append does not take 1 again.
func TestImportedIDOneMovesAFreshSequence(t *testing.T) {
	s, _, _ := openTraced(t, 2)
	ctx := context.Background()
	rec := map[string]any{"id": "s", "source": "cli", "started_at": 1000.0,
		"messages": []any{map[string]any{"id": 1.0, "role": "user", "content": "first", "timestamp": 1001.0}}}
	if _, err := s.ImportSession(ctx, rec, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	id, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: strPtr("second")})
	if err != nil || id != 2 {
		t.Errorf("AppendMessage = %d, %v; want id 2", id, err)
	}
}

func pad2(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestImportAtOnceKeepsSequencePastIDs: two imports at once whose messages
// carry their ids (import --jobs 2 of an export) leave the id sequence past
// the higher of their ids, whichever moves it last. Unguarded, both could
// find the sequence behind and the lower setval land last: the next append
// would then take an imported id again. The race is narrow, so it is tried
// four hundred times (without the lock it failed in four runs of five at 150).
func TestImportAtOnceKeepsSequencePastIDs(t *testing.T) {
	s, _, _ := openTraced(t, 4)
	ctx := context.Background()
	for round := range 400 {
		base := int64(round+1) * 1000
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var recs []map[string]any
				for k := range 2 {
					recs = append(recs, map[string]any{"id": "r" + itoa(round) + "-" + itoa(g) + "-" + itoa(k), "source": "cli", "started_at": 1.0,
						"messages": []any{map[string]any{"id": float64(base + int64(g*100+k)), "role": "user", "content": "c", "timestamp": 1.0}}})
				}
				if _, err := s.ImportSessions(ctx, recs, sessiondb.ImportOptions{}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		var last int64
		if err := s.pool.QueryRow(ctx, "SELECT pg_sequence_last_value(pg_get_serial_sequence('messages', 'id'))").Scan(&last); err != nil {
			t.Fatal(err)
		}
		if last < base+101 {
			id, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "r0-0-0", Role: "user", Content: strPtr("after")})
			t.Fatalf("round %d: the sequence stands at %d, below the imported id %d; the next append took %d (%v)", round, last, base+101, id, err)
		}
	}
}

// oddRecords is a batch of sessions of odd shapes: a session its own
// parent, two that are each other's, NUL bytes and invalid UTF-8 in content,
// a multimodal content, the highest id an import keeps, an id twice in the
// batch, messages of five sets of columns and, with taken, a message id
// another session holds. withIDs gives the messages their ids.
func oddRecords(withIDs, taken bool) []map[string]any {
	var recs []map[string]any
	mk := func(id string, parent string, msgs []any) {
		r := map[string]any{"id": id, "source": "cli", "started_at": 1000.0, "messages": msgs}
		if parent != "" {
			r["parent_session_id"] = parent
		}
		recs = append(recs, r)
	}
	msg := func(id float64, content any, extra map[string]any) map[string]any {
		m := map[string]any{"role": "user", "content": content, "timestamp": 1000.0}
		if withIDs {
			m["id"] = id
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	mk("self", "self", []any{msg(5, "a\x00b", nil), msg(6, "bad \xff utf8", nil)})
	mk("cyA", "cyB", []any{msg(7, "x", map[string]any{"tool_calls": []any{map[string]any{"id": "c"}}})})
	mk("cyB", "cyA", []any{msg(8, "y", map[string]any{"reasoning": "r"})})
	mk("big", "", []any{msg(float64(1<<53-1), "near max", nil), msg(9, "\x00json:[{\"type\":\"text\",\"text\":\"p\"}]", nil)})
	mk("dup", "", []any{msg(11, "first dup", nil)})
	mk("dup", "", []any{msg(12, "second dup", nil)})
	if taken {
		mk("takes", "", []any{msg(100, "takes a taken id", nil), msg(101, "free", nil)})
	}
	return recs
}

// TestImportBulkStoresWhatOneAtATimeDoes: a batch of odd sessions
// (oddRecords) imported in one ImportSessions, through InsertAll or, with a
// taken message id, its fallback, stores what importing them one at a time
// stores: every session exported the same (ids too, whether kept or taken
// from the sequence), the session holding the taken id untouched, and the
// next append's id the same.
func TestImportBulkStoresWhatOneAtATimeDoes(t *testing.T) {
	for _, tc := range []struct {
		name           string
		withIDs, taken bool
	}{{"kept ids", true, false}, {"kept ids, one taken", true, true}, {"new ids", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			stored := map[bool]string{}
			for _, bulk := range []bool{true, false} {
				s, _, _ := openTraced(t, 2)
				ctx := context.Background()
				owner := map[string]any{"id": "owner", "source": "cli", "started_at": 1.0, "messages": []any{map[string]any{"id": 100.0, "role": "user", "content": "owned", "timestamp": 1.0}}}
				if _, err := s.ImportSession(ctx, owner, sessiondb.ImportOptions{}); err != nil {
					t.Fatal(err)
				}
				recs := oddRecords(tc.withIDs, tc.taken)
				var results []sessiondb.ImportResult
				if bulk {
					var err error
					if results, err = s.ImportSessions(ctx, recs, sessiondb.ImportOptions{}); err != nil {
						t.Fatal(err)
					}
				} else {
					for _, r := range recs {
						res, err := s.ImportSession(ctx, r, sessiondb.ImportOptions{})
						if err != nil {
							t.Fatal(err)
						}
						results = append(results, res)
					}
				}
				var b strings.Builder
				for i, r := range results {
					fmt.Fprintf(&b, "%s imported %v\n", recs[i]["id"], r.Imported)
				}
				for _, id := range []string{"owner", "self", "cyA", "cyB", "big", "dup", "takes"} {
					rec, err := s.ExportSession(ctx, id)
					line, _ := json.Marshal(rec)
					fmt.Fprintf(&b, "%s %v\n", line, err)
				}
				next, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "owner", Role: "user", Content: strPtr("after")})
				fmt.Fprintf(&b, "next append %d %v\n", next, err)
				stored[bulk] = b.String()
			}
			if stored[true] != stored[false] {
				t.Errorf("in one batch:\n%s\none at a time:\n%s", stored[true], stored[false])
			}
			if !strings.Contains(stored[true], `"content":"owned"`) || strings.Count(stored[true], "dup imported true") != 1 {
				t.Errorf("the owner's message or the one dup is missing:\n%s", stored[true])
			}
		})
	}
}

// TestImportChildAndParentAtOnce: a child and its parent imported in two
// batches at once through one store, in both orders, a hundred and fifty
// times: the child is linked to its parent every time, and a grandchild
// that came with the parent to the child, with no error and no deadlock.
func TestImportChildAndParentAtOnce(t *testing.T) {
	s, _, _ := openTraced(t, 6)
	ctx := context.Background()
	for it := 0; it < 150; it++ {
		p, c := fmt.Sprintf("p%d", it), fmt.Sprintf("c%d", it)
		gc := fmt.Sprintf("g%d", it)
		mk := func(id, parent string, n int) map[string]any {
			var msgs []any
			for j := 0; j < n; j++ {
				msgs = append(msgs, map[string]any{"role": "user", "content": id, "timestamp": 1.0})
			}
			r := map[string]any{"id": id, "source": "cli", "started_at": 1.0, "messages": msgs}
			if parent != "" {
				r["parent_session_id"] = parent
			}
			return r
		}
		var wg sync.WaitGroup
		batches := [][]map[string]any{
			{mk(c, p, it%5), mk(c+"x", "", 2)},
			{mk(p, "", (it/5)%5), mk(gc, c, 1)},
		}
		if it%2 == 1 {
			batches[0], batches[1] = batches[1], batches[0]
		}
		for _, b := range batches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.ImportSessions(ctx, b, sessiondb.ImportOptions{}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for _, pair := range [][2]string{{c, p}, {gc, c}} {
			got, err := s.GetSession(ctx, pair[0])
			if err != nil {
				t.Fatal(err)
			}
			if got.ParentSessionID == nil || *got.ParentSessionID != pair[1] {
				t.Errorf("it %d: %s parent %v want %s", it, pair[0], got.ParentSessionID, pair[1])
			}
		}
	}
}

// TestImportSameSessionsAtOnce: two batches at once holding the same two
// sessions in opposite orders, their messages with the same ids, which
// lock each other's rows (a deadlock the server breaks and the write
// retries): no error, each session once with its five messages.
func TestImportSameSessionsAtOnce(t *testing.T) {
	s, _, _ := openTraced(t, 6)
	ctx := context.Background()
	for it := 0; it < 20; it++ {
		a, b := fmt.Sprintf("a%d", it), fmt.Sprintf("b%d", it)
		mk := func(id string, base int, tag string) map[string]any {
			var msgs []any
			for j := 0; j < 5; j++ {
				msgs = append(msgs, map[string]any{"id": float64(it*100 + base + j + 1), "role": "user", "content": id + tag, "timestamp": 1.0})
			}
			return map[string]any{"id": id, "source": "cli", "started_at": 1.0, "messages": msgs}
		}
		var wg sync.WaitGroup
		for _, batch := range [][]map[string]any{{mk(a, 0, "x"), mk(b, 5, "x")}, {mk(b, 5, "y"), mk(a, 0, "y")}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.ImportSessions(ctx, batch, sessiondb.ImportOptions{})
				if err != nil {
					t.Errorf("it %d: %v (%v)", it, err, res)
				}
			}()
		}
		wg.Wait()
		for _, id := range []string{a, b} {
			ms, err := s.GetMessages(ctx, id)
			if err != nil || len(ms) != 5 {
				t.Errorf("it %d: %s has %d messages (%v)", it, id, len(ms), err)
			}
		}
	}
}
