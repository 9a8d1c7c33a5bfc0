package open_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/open"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPicksTheBackend: a path opens the SQLite backend, a postgres:// URL
// the PostgreSQL one, for each kind of store; MustExist refuses an empty
// location of either kind with not_found.
func TestPicksTheBackend(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	url := pgtest.URL(t)
	loc := func() string { return pgtest.WithSearchPath(url, pgtest.Schema(t, url)) }
	closeAll := func(cs ...interface{ Close() error }) {
		for _, c := range cs {
			c.Close()
		}
	}

	h1, err := open.History(ctx, filepath.Join(dir, "state.db"), open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h2, err := open.History(ctx, loc(), open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(h1, h2)
	if _, ok := h1.(*sqlite.Store); !ok {
		t.Errorf("a path opened %T", h1)
	}
	if _, ok := h2.(*postgres.Store); !ok {
		t.Errorf("a URL opened %T", h2)
	}

	c1, err := open.Central(ctx, filepath.Join(dir, "v2.db"), open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := open.Central(ctx, loc(), open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(c1, c2)
	if _, ok := c1.(*sqlite.Central); !ok {
		t.Errorf("a path opened %T", c1)
	}
	if _, ok := c2.(*postgres.Central); !ok {
		t.Errorf("a URL opened %T", c2)
	}

	s1, err := open.Subagents(ctx, filepath.Join(dir, "state.sqlite"), open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := open.Subagents(ctx, loc(), open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(s1, s2)
	if _, ok := s1.(*sqlite.Subagents); !ok {
		t.Errorf("a path opened %T", s1)
	}
	if _, ok := s2.(*postgres.Subagents); !ok {
		t.Errorf("a URL opened %T", s2)
	}

	for _, l := range []string{filepath.Join(dir, "missing.db"), loc()} {
		if _, err := open.History(ctx, l, open.Options{MustExist: true}); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			t.Errorf("History(%s, MustExist) = %v, want not_found", l, err)
		}
		if _, err := open.Central(ctx, l, open.Options{MustExist: true}); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			t.Errorf("Central(%s, MustExist) = %v, want not_found", l, err)
		}
	}
	if _, err := open.History(ctx, "", open.Options{}); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("History(\"\") = %v, want invalid", err)
	}
}
