package mailbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestWritersSyncFully holds both sides' read-write opens to
// synchronous=FULL under either driver (the cgo driver's default would be
// NORMAL).
func TestWritersSyncFully(t *testing.T) {
	ctx := context.Background()
	for name, pragmas := range map[string][]string{"host": pragmasRW, "agent": pragmasAgentRW} {
		path := filepath.Join(t.TempDir(), "f.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		db, conn, err := openConn(ctx, path, pragmas)
		if err != nil {
			t.Fatal(err)
		}
		var level int
		if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&level); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		db.Close()
		if level != 2 {
			t.Errorf("%s writer: synchronous = %d, want 2 (FULL)", name, level)
		}
	}
}
