package sqlite

import (
	"context"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestReadOnlyOlderFilesRead: a read-only open of a file of every schema
// before 6 answers every read (search, title, listings in each order,
// lineage, transcript, usage) from the columns it has, where a read naming
// a later column (title, cache_read_tokens) failed; the file is not
// touched.
func TestReadOnlyOlderFilesRead(t *testing.T) {
	ctx := context.Background()
	for v := 1; v <= 5; v++ {
		path := buildFixture(t, v, true)
		before := masterSQL(t, path)
		s := openTestStore(t, path, Options{ReadOnly: true})
		step := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Errorf("v%d: %s: %v", v, what, err)
			}
		}
		hits, err := s.SearchMessages(ctx, "kubernetes", sessiondb.SearchFilter{})
		step("search", err)
		if err == nil && (len(hits) != 1 || hits[0].SessionID != "old1") {
			t.Errorf("v%d: search found %+v", v, hits)
		}
		sess, err := s.GetSession(ctx, "old1")
		step("GetSession", err)
		wantTitle := ""
		if v >= 3 {
			wantTitle = "first"
		}
		if err == nil && (sess.Title == nil && wantTitle != "" || sess.Title != nil && *sess.Title != wantTitle) {
			t.Errorf("v%d: title %v, want %q", v, sess.Title, wantTitle)
		}
		title, ok, err := s.GetSessionTitle(ctx, "old1")
		step("GetSessionTitle", err)
		if title != wantTitle || ok != (wantTitle != "") {
			t.Errorf("v%d: GetSessionTitle = %q, %v; want %q", v, title, ok, wantTitle)
		}
		if _, err := s.GetSessionByTitle(ctx, "first"); v >= 3 {
			step("GetSessionByTitle", err)
		} else if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			t.Errorf("v%d: GetSessionByTitle on a file without titles: %v, want not found", v, err)
		}
		if _, err := s.ResolveSessionByTitle(ctx, "first"); v >= 3 {
			step("ResolveSessionByTitle", err)
		} else if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			t.Errorf("v%d: a title on a file without titles: %v, want not found", v, err)
		}
		for _, sort := range []sessiondb.SessionSort{sessiondb.SortStarted, sessiondb.SortLastActive, sessiondb.SortCost, sessiondb.SortTokens} {
			page, err := s.ListSessions(ctx, sessiondb.SessionQuery{Sort: sort, Text: "old"})
			step("ListSessions "+string(sort), err)
			if err == nil && len(page.Sessions) != 2 {
				t.Errorf("v%d: ListSessions %s: %d sessions", v, sort, len(page.Sessions))
			}
		}
		rich, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{})
		step("ListSessionsRich", err)
		if err == nil && len(rich) != 2 {
			t.Errorf("v%d: ListSessionsRich: %d sessions", v, len(rich))
		}
		_, err = s.SearchSessions(ctx, "old", 20, 0)
		step("SearchSessions", err)
		msgs, err := s.GetMessages(ctx, "old1")
		step("GetMessages", err)
		if err == nil && len(msgs) != 2 {
			t.Errorf("v%d: %d messages", v, len(msgs))
		}
		_, err = s.GetMessagesAsConversation(ctx, "old1", 0)
		step("GetMessagesAsConversation", err)
		_, err = sessiondb.Lineage(ctx, s, "old1")
		step("Lineage", err)
		_, err = s.NextTitleInLineage(ctx, "first")
		step("NextTitleInLineage", err)
		_, err = s.CompressionTip(ctx, "old1")
		step("CompressionTip", err)
		_, err = s.Usage(ctx, sessiondb.UsageFilter{})
		step("Usage", err)
		_, err = s.ExportSession(ctx, "old1")
		step("ExportSession", err)
		s.Close()
		if after := masterSQL(t, path); !sameStrings(before, after) {
			t.Errorf("v%d: the read-only open changed the schema", v)
		}
	}
}
