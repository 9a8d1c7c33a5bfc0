package storetest

import (
	"math"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// testValidation holds every backend to the root's Validate rules: each
// method refuses input its type's Validate refuses, as invalid naming the
// field, and changes nothing.
func testValidation(t *testing.T, h Harness) {
	nan := math.NaN()
	long := strings.Repeat("x", sessiondb.MaxSessionIDBytes+1)
	const tooLong = "bytes, the limit is 255"
	cases := []struct {
		name  string
		call  func(e *env) error
		field string
	}{
		{"CreateSession without source", func(e *env) error {
			_, err := e.s.CreateSession(e.ctx, sessiondb.NewSession{ID: "b"})
			return err
		}, "source"},
		{"ForkSession onto its own id", func(e *env) error {
			_, err := e.s.ForkSession(e.ctx, "a", 0, sessiondb.NewSession{ID: "a"})
			return err
		}, "id of its own"},
		{"AppendMessage without role", func(e *env) error {
			_, err := e.s.AppendMessage(e.ctx, sessiondb.NewMessage{SessionID: "a"})
			return err
		}, "role"},
		{"AppendMessage without session", func(e *env) error {
			_, err := e.s.AppendMessage(e.ctx, sessiondb.NewMessage{Role: "user", Content: str("x")})
			return err
		}, "session id"},
		{"UpdateTokenCounts with a NaN cost", func(e *env) error {
			return e.s.UpdateTokenCounts(e.ctx, "a", sessiondb.TokenUpdate{Input: 5, EstimatedCostUSD: &nan})
		}, "estimated_cost_usd"},
		{"GetMessagesPage with a negative limit", func(e *env) error {
			_, err := e.s.GetMessagesPage(e.ctx, "a", sessiondb.Page{Limit: -1})
			return err
		}, "limit"},
		{"SearchSessions with a negative offset", func(e *env) error {
			_, err := e.s.SearchSessions(e.ctx, "", 10, -1)
			return err
		}, "offset"},
		{"ListSessionsRich with a negative limit", func(e *env) error {
			_, err := e.s.ListSessionsRich(e.ctx, sessiondb.RichFilter{Limit: -1})
			return err
		}, "limit -1"},
		{"SearchMessages with a negative offset", func(e *env) error {
			_, err := e.s.SearchMessages(e.ctx, "hello", sessiondb.SearchFilter{Offset: -4})
			return err
		}, "offset -4"},
		{"ImportSession without source", func(e *env) error {
			_, err := e.s.ImportSession(e.ctx, map[string]any{"id": "b", "started_at": 1.0}, sessiondb.ImportOptions{})
			return err
		}, "source"},
		{"CreateSession with an id over the limit", func(e *env) error {
			_, err := e.s.CreateSession(e.ctx, sessiondb.NewSession{ID: long, Source: "cli"})
			return err
		}, tooLong},
		{"EnsureSession with an id over the limit", func(e *env) error {
			return e.s.EnsureSession(e.ctx, long, "cli", "")
		}, tooLong},
		{"ForkSession onto an id over the limit", func(e *env) error {
			_, err := e.s.ForkSession(e.ctx, "a", 0, sessiondb.NewSession{ID: long})
			return err
		}, tooLong},
		{"ImportSession with an id over the limit", func(e *env) error {
			_, err := e.s.ImportSession(e.ctx, map[string]any{"id": long, "source": "cli", "started_at": 1.0}, sessiondb.ImportOptions{})
			return err
		}, tooLong},
		{"AppendMessage to an id over the limit", func(e *env) error {
			_, err := e.s.AppendMessage(e.ctx, sessiondb.NewMessage{SessionID: long, Role: "user", Content: str("x")})
			return err
		}, tooLong},
		{"EndSession with a reason of 900 KB", func(e *env) error {
			return e.s.EndSession(e.ctx, "a", strings.Repeat("r", 900<<10))
		}, "end_reason"},
		{"EndSession with a NUL in its reason", func(e *env) error {
			return e.s.EndSession(e.ctx, "a", "done\x00")
		}, "end_reason"},
		{"EndSession with an escape sequence in its reason", func(e *env) error {
			return e.s.EndSession(e.ctx, "a", "\x1b[2Jdone")
		}, "end_reason"},
		{"EndSession with an empty reason", func(e *env) error {
			return e.s.EndSession(e.ctx, "a", "")
		}, "end_reason"},
		{"ImportSession with a line break in end_reason", func(e *env) error {
			_, err := e.s.ImportSession(e.ctx, map[string]any{"id": "b", "source": "cli", "started_at": 1.0, "ended_at": 2.0, "end_reason": "a\nb"}, sessiondb.ImportOptions{})
			return err
		}, "end_reason"},
		{"ApplyRetention without an age", func(e *env) error {
			_, err := e.s.ApplyRetention(e.ctx, sessiondb.RetentionPolicy{})
			return err
		}, "max age"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			e.create("a", "cli")
			e.msg("a", "user", "hello")
			err := tc.call(e)
			wantCode(t, tc.name, err, sessiondb.EINVALID)
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%s: error %q does not name %q", tc.name, err, tc.field)
			}
			if n, err := e.s.SessionCount(e.ctx, ""); err != nil || n != 1 {
				t.Errorf("sessions after the refusal = %d, %v; want 1", n, err)
			}
			s := e.get("a")
			if s.MessageCount != 1 || s.InputTokens != 0 || s.EndedAt != nil {
				t.Errorf("session a after the refusal: %d messages, %d input tokens, ended at %v; want 1, 0, not ended", s.MessageCount, s.InputTokens, derefF(s.EndedAt))
			}
		})
	}
}

// testSessionIDLimit: an id of MaxSessionIDBytes is taken by every way a
// session is made and by appends, and reads back whole.
func testSessionIDLimit(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := func(c string) string { return strings.Repeat(c, sessiondb.MaxSessionIDBytes) }
	e.create(id("a"), "cli")
	m := e.msg(id("a"), "user", "hello")
	if err := e.s.EnsureSession(e.ctx, id("b"), "cli", ""); err != nil {
		t.Fatalf("EnsureSession with a %d-byte id: %v", sessiondb.MaxSessionIDBytes, err)
	}
	if _, err := e.s.ForkSession(e.ctx, id("a"), m, sessiondb.NewSession{ID: id("c")}); err != nil {
		t.Fatalf("ForkSession onto a %d-byte id: %v", sessiondb.MaxSessionIDBytes, err)
	}
	rec := e.exported(id("a"))
	rec["id"] = id("d")
	e.importOne(rec, true)
	for _, c := range []string{"a", "b", "c", "d"} {
		if got := e.get(id(c)); got.ID != id(c) {
			t.Errorf("session %s…: read back as %q", c, got.ID)
		}
	}
	for _, c := range []string{"a", "c", "d"} {
		if ms := e.messages(id(c)); len(ms) != 1 || deref(ms[0].Content) != "hello" {
			t.Errorf("messages of session %s… = %+v, want the one hello", c, ms)
		}
	}
}
