package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// A copy of a store that is in use: a session deleted from the source
// once copied is not held against the copy (it was there when listed),
// and one that took a message once copied fails the check naming it as
// changed in the source, not as held in the target before, with what to
// do; a session the target did hold before is still named as such.
func TestCopyOfAStoreInUse(t *testing.T) {
	ctx := context.Background()
	_, from, to := copyStores(t)
	rec := oneMessage
	var recs []map[string]any
	for i := range sessiondb.CopyBatch + 10 {
		recs = append(recs, rec(fmt.Sprintf("s%03d", i), "hello", 1000+float64(i)))
	}
	if _, err := from.ImportSessions(ctx, recs, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := to.ImportSessions(ctx, []map[string]any{rec("s055", "other", 1055)}, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	once := false
	_, err := sessiondb.Copy(ctx, from, to, sessiondb.CopyOptions{Progress: func(done, total int) {
		if once {
			return
		}
		once = true // the first batch, s000 to s049, is in
		if _, err := from.DeleteSession(ctx, "s003"); err != nil {
			t.Error(err)
		}
		if _, err := from.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s007", Role: "user", Content: ptrTo("later")}); err != nil {
			t.Error(err)
		}
	}})
	msg := fmt.Sprint(err)
	if sessiondb.ErrorCode(err) != sessiondb.ECONFLICT || strings.Contains(msg, "s003") ||
		!strings.Contains(msg, "s055: in the target before, with other content") ||
		!strings.Contains(msg, "s007: changed in the source while it was copied") {
		t.Errorf("copy of a store in use: %v; want conflict naming s055 as held before and s007 as changed, not s003", err)
	}
}

func ptrTo[T any](v T) *T { return &v }
