package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// A message read selects the newer Hermes' message columns only from a
// file that has some of them: a v6 file (every store sessiondb makes)
// reads its 13 columns, and the messages keep the newer fields' defaults
// (a live row, nothing observed, no platform id). A current Hermes file
// reads all of them.
func TestMessageReadsSelectNewerColumnsOnlyWhereTheyAre(t *testing.T) {
	ctx := context.Background()
	v6 := openTestStore(t, "", Options{})
	mustCreate(t, v6, "a", "cli")
	mustAppend(t, v6, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: str("hello")})
	h21 := openTestStore(t, hermes21Copy(t), Options{ReadOnly: true})
	var h21Session string
	if err := h21.db.QueryRowContext(ctx, "SELECT session_id FROM messages ORDER BY id LIMIT 1").Scan(&h21Session); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		s       *Store
		session string
		cols    int
	}{
		{"v6", v6, "a", len(messageColumns)},
		{"hermes21", h21, h21Session, len(messageColumns) + len(newerMessageColumns)},
	} {
		var page *sessiondb.MessagePage
		traced := traceReads(t, tc.s, func() (err error) {
			page, err = tc.s.GetMessagesPage(ctx, tc.session, sessiondb.Page{Limit: 10, FromStart: true})
			return err
		})
		read := 0
		for _, q := range traced {
			if !strings.HasPrefix(q.q, "SELECT m.id") {
				continue
			}
			rows, err := tc.s.db.QueryContext(ctx, q.q, q.args...)
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			rows.Close()
			if len(cols) != tc.cols {
				t.Errorf("%s: a message read selects %d columns, want %d: %s", tc.name, len(cols), tc.cols, q.q)
			}
			read++
		}
		if read == 0 || page == nil || len(page.Messages) == 0 {
			t.Fatalf("%s: no message read traced (%d queries) or no message read", tc.name, len(traced))
		}
		if tc.name == "v6" {
			m := page.Messages[0]
			if m.Active != 1 || m.Compacted != 0 || m.Observed != 0 || m.PlatformMessageID != nil || m.ReasoningContent != nil || m.EffectDisposition != nil || m.CodexMessageItems != nil {
				t.Errorf("v6 message %+v: want the newer columns' defaults (active 1, the rest zero or NULL)", m)
			}
		}
	}
}
