package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/internal/regsql"
)

// TestRegistryWriteRerunsOnALostInsertRace: a registry write whose insert
// violates a key runs again at once (the race's winner has committed, so
// the rerun finds its row), a bounded number of times, and a key that
// really is taken ends as conflict; the history store's writes report the
// violated key at the first attempt.
func TestRegistryWriteRerunsOnALostInsertRace(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	c, err := OpenCentral(ctx, url, Options{Schema: pgtest.Schema(t, url), MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b := registryBackend{c.conn}
	insert := func(tx regsql.Tx, id string) error {
		_, err := tx.Exec("INSERT INTO users (id, kind, created_at) VALUES (?, 'human', '2026-01-01T00:00:00.000Z')", id)
		return err
	}
	if err := b.Write(ctx, "insert u1", func(tx regsql.Tx) error { return insert(tx, "u1") }); err != nil {
		t.Fatal(err)
	}

	// Lost the race once: the second run takes the path a found row takes.
	runs := 0
	err = b.Write(ctx, "ensure u1", func(tx regsql.Tx) error {
		runs++
		if runs == 1 {
			return insert(tx, "u1")
		}
		return insert(tx, "u2")
	})
	if err != nil || runs != 2 {
		t.Fatalf("a write that lost one insert race: err %v after %d runs, want nil after 2", err, runs)
	}

	// A key really taken: every rerun fails the same way.
	runs = 0
	err = b.Write(ctx, "insert u1 again", func(tx regsql.Tx) error { runs++; return insert(tx, "u1") })
	if code := sessiondb.ErrorCode(err); code != sessiondb.ECONFLICT || runs != 1+uniqueRetries {
		t.Fatalf("a key really taken: code %q (%v) after %d runs, want %q after %d", code, err, runs, sessiondb.ECONFLICT, 1+uniqueRetries)
	}

	// The history store's write path does not rerun on a violated key.
	runs = 0
	err = c.write(ctx, "insert u1 once", func(tx pgx.Tx) error {
		runs++
		return insert(&ctxTx{ctx: ctx, tx: tx}, "u1")
	})
	if code := sessiondb.ErrorCode(err); code != sessiondb.ECONFLICT || runs != 1 {
		t.Fatalf("write: code %q (%v) after %d runs, want %q after 1", code, err, runs, sessiondb.ECONFLICT)
	}
}
