// Package pgtest gives tests a PostgreSQL server: the one CI names in
// SESSIONDB_TEST_POSTGRES, or else a throwaway cluster this test binary
// starts with .ci/postgres (when initdb is installed) and stops in Main.
// Each test works in a schema of its own, dropped when it ends, so tests
// share one server without seeing each other's rows. It is imported by
// tests only.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the server the tests use; EnvRequire, when "1" (CI sets
// it), makes a test that finds no server fail instead of skip.
const (
	EnvURL     = "SESSIONDB_TEST_POSTGRES"
	EnvRequire = "SESSIONDB_REQUIRE_POSTGRES"
)

// local is the cluster this test binary started, if any.
var local struct {
	once sync.Once
	dir  string
	url  string
	err  error
}

// URL returns the server's URL. Without SESSIONDB_TEST_POSTGRES it starts
// a cluster once per test binary (call Main from TestMain to stop it); if
// that is impossible the test fails under SESSIONDB_REQUIRE_POSTGRES=1 and
// is skipped, saying why, otherwise.
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	local.once.Do(func() { local.dir, local.url, local.err = startLocal() })
	if local.err != nil {
		unavailable(t, EnvURL+" is unset and no cluster could be started", local.err)
	}
	return local.url
}

// unavailable ends a test that finds no server: a failure under
// SESSIONDB_REQUIRE_POSTGRES=1, else a skip saying why.
func unavailable(t testing.TB, why string, err error) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("PostgreSQL is required (%s=1) but %s: %v", EnvRequire, why, err)
	}
	t.Skipf("no PostgreSQL: %s (set %s or install initdb): %v", why, EnvURL, err)
}

// PasswordServer starts a cluster of the test's own (with .ci/postgres
// start --password) whose TCP connections must give a password
// (scram-sha-256), and returns its URL, which holds none, and the
// password. The shared server trusts every loopback connection, so only
// such a cluster can tell whether a client sent the right password. It is
// stopped when the test ends. It needs initdb, as URL's own cluster does.
func PasswordServer(t testing.TB) (url, password string) {
	t.Helper()
	script, err := findScript()
	if err != nil {
		unavailable(t, "no cluster with a password could be started", err)
	}
	b := make([]byte, 12)
	rand.Read(b)
	password = "pw-" + hex.EncodeToString(b)
	pwfile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwfile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sessiondb-pgtest-pw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("bash", script, "stop", dir).Run() })
	out, err := exec.Command("bash", script, "start", dir, "--password", pwfile).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		unavailable(t, "no cluster with a password could be started", fmt.Errorf("%s start: %v %s", script, err, strings.TrimSpace(stderr)))
	}
	return strings.TrimSpace(string(out)), password
}

// Main runs the tests of a package and then stops the cluster URL may
// have started. Use it as the package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the cluster URL may have started, for a package whose
// TestMain does more than Main.
func Stop() {
	if local.dir != "" {
		script, err := findScript()
		if err == nil {
			exec.Command("bash", script, "stop", local.dir).Run()
		}
	}
}

// startLocal starts a cluster in a new temporary folder with .ci/postgres
// and returns the folder and the server's URL.
func startLocal() (dir, url string, err error) {
	script, err := findScript()
	if err != nil {
		return "", "", err
	}
	dir, err = os.MkdirTemp("", "sessiondb-pgtest-")
	if err != nil {
		return "", "", err
	}
	out, err := exec.Command("bash", script, "start", dir).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("%s start: %v %s", script, err, strings.TrimSpace(stderr))
	}
	return dir, strings.TrimSpace(string(out)), nil
}

// findScript finds .ci/postgres in the working folder or above it (go test
// runs in the package's folder inside the repository).
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, ".ci", "postgres")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf(".ci/postgres not found above the working folder")
		}
		dir = parent
	}
}

// Schema creates an empty schema for one test on the server at url and
// drops it (with everything in it) when the test ends. The name is
// unique, lower case and safe to use unquoted.
func Schema(t testing.TB, url string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	Exec(t, url, "CREATE SCHEMA "+name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	return name
}

// Exec runs sql (one or more statements, no arguments) on its own
// connection to url, failing the test on error.
func Exec(t testing.TB, url, sql string, args ...any) {
	t.Helper()
	onConn(t, url, sql, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	})
}

// onConn runs fn on a connection of its own to url, within a minute,
// failing the test when it cannot connect or fn fails (sql names the work).
func onConn(t testing.TB, url, sql string, fn func(context.Context, *pgx.Conn) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if err := fn(ctx, conn); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// WithSearchPath returns url with the connection parameter search_path
// set to schema, for code that opens its own connections.
func WithSearchPath(url, schema string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

// Count runs a query returning one integer on its own connection to url.
func Count(t testing.TB, url, sql string, args ...any) int {
	t.Helper()
	var n int
	onConn(t, url, sql, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, sql, args...).Scan(&n)
	})
	return n
}
