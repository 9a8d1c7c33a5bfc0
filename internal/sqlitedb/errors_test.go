package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// Code classifies real SQLite errors of both drivers, not hand-made ones.
func TestCodeClassifiesSQLiteErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	db := openDB(t, path, `CREATE TABLE p(id INTEGER PRIMARY KEY);
CREATE TABLE c(id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id), v TEXT NOT NULL, n INTEGER CHECK (n >= 0));
CREATE TRIGGER refuse BEFORE INSERT ON c WHEN NEW.v = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END;
INSERT INTO p VALUES (1); INSERT INTO c VALUES (1, 1, 'a', 0);`, "PRAGMA foreign_keys=ON")
	exec := func(q string) error { _, err := db.ExecContext(ctx, q); return err }

	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	junkDB, err := Open(Config{Path: junk})
	if err != nil {
		t.Fatal(err)
	}
	defer junkDB.Close()
	ro, err := Open(Config{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	cases := []struct {
		name string
		err  error
		code string
	}{
		{"nil", nil, ""},
		{"unique", exec("INSERT INTO c VALUES (1, 1, 'b', 0)"), sessiondb.ECONFLICT},
		{"trigger", exec("INSERT INTO c VALUES (2, 1, 'refused', 0)"), sessiondb.ECONFLICT},
		{"foreign key", exec("INSERT INTO c VALUES (3, 99, 'b', 0)"), sessiondb.EINVALID},
		{"not null", exec("INSERT INTO c VALUES (4, 1, NULL, 0)"), sessiondb.EINTERNAL},
		{"check", exec("INSERT INTO c VALUES (5, 1, 'b', -1)"), sessiondb.EINTERNAL},
		{"syntax", exec("INSERT INTO nowhere VALUES (1)"), sessiondb.EINTERNAL},
		{"read-only", func() error { _, err := ro.ExecContext(ctx, "INSERT INTO p VALUES (2)"); return err }(), sessiondb.EINVALID},
		{"not a database", func() error { _, err := junkDB.ExecContext(ctx, "SELECT * FROM sqlite_master"); return err }(), sessiondb.EINVALID},
		{"cancelled context", func() error { _, err := db.QueryContext(cancelled, "SELECT 1"); return err }(), sessiondb.EBUSY},
		{"deadline", context.DeadlineExceeded, sessiondb.EBUSY},
		{"already coded", sessiondb.Errorf(sessiondb.ENOTFOUND, "gone"), sessiondb.ENOTFOUND},
		{"not SQLite", errors.New("something else"), sessiondb.EINTERNAL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code != "" && tc.err == nil {
				t.Fatal("the statement did not fail")
			}
			if got := Code(tc.err); got != tc.code {
				t.Errorf("Code(%v) = %q; want %q", tc.err, got, tc.code)
			}
			wrapped := Wrap(tc.err, "doing %s", "it")
			if tc.err == nil {
				if wrapped != nil {
					t.Errorf("Wrap(nil) = %v", wrapped)
				}
				return
			}
			if sessiondb.ErrorCode(wrapped) != tc.code || !errors.Is(wrapped, tc.err) || !strings.HasPrefix(wrapped.Error(), "doing it: ") {
				t.Errorf("Wrap = %v (code %q); want %q wrapping the cause", wrapped, sessiondb.ErrorCode(wrapped), tc.code)
			}
		})
	}
	// A cancelled context stays recognisable through Wrap.
	if err := Wrap(fmt.Errorf("read: %w", context.Canceled), "list"); !errors.Is(err, context.Canceled) || sessiondb.ErrorCode(err) != sessiondb.EBUSY {
		t.Errorf("Wrap(cancelled) = %v, code %q", err, sessiondb.ErrorCode(err))
	}
}
