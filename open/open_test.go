package open_test

import (
	"context"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
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

// TestPasswordFromTheEnvironment: a postgres:// URL without a password
// opens a server that requires one when the password is in $PGPASSWORD or
// in a password file ($PGPASSFILE), libpq's conventions, so it need never
// be on a command line; without either the server refuses, and a wrong
// password in a URL is not repeated in the error.
func TestPasswordFromTheEnvironment(t *testing.T) {
	ctx := context.Background()
	url, password := pgtest.PasswordServer(t)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	opens := func(t *testing.T, location string) error {
		t.Helper()
		st, err := open.History(ctx, location, open.Options{})
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.CreateSession(ctx, sessiondb.NewSession{ID: t.Name(), Source: "cli"})
		return err
	}
	noPassword := func(t *testing.T) {
		t.Setenv("PGPASSWORD", "")
		t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	}

	t.Run("no password anywhere", func(t *testing.T) {
		noPassword(t)
		if err := opens(t, url); err == nil {
			t.Fatal("opened without a password: the server does not ask for one, and this test proves nothing")
		}
	})
	t.Run("PGPASSWORD", func(t *testing.T) {
		noPassword(t)
		t.Setenv("PGPASSWORD", password)
		if err := opens(t, url); err != nil {
			t.Fatalf("with PGPASSWORD: %v", err)
		}
	})
	t.Run("PGPASSFILE", func(t *testing.T) {
		noPassword(t)
		file := filepath.Join(t.TempDir(), "pgpass")
		line := fmt.Sprintf("%s:%s:*:postgres:%s\n", u.Hostname(), u.Port(), password)
		if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PGPASSFILE", file)
		if err := opens(t, url); err != nil {
			t.Fatalf("with PGPASSFILE: %v", err)
		}
	})
	t.Run("a wrong password in the URL", func(t *testing.T) {
		noPassword(t)
		wrong := *u
		wrong.User = neturl.UserPassword("postgres", "wrong-"+password)
		err := opens(t, wrong.String())
		if err == nil || strings.Contains(err.Error(), "wrong-") {
			t.Fatalf("open with a wrong password: %v; want an error that does not show it", err)
		}
	})
}
