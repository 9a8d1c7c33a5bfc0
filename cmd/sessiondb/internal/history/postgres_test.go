package history

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// pgURL returns a URL of the test server whose search_path is a fresh,
// empty schema: a store location of its own.
func pgURL(t *testing.T) string {
	t.Helper()
	url := pgtest.URL(t)
	return pgtest.WithSearchPath(url, pgtest.Schema(t, url))
}

// TestPostgresLocation runs the same commands on a state.db file and on a
// postgres:// URL given to --db: the output is the same, so moving to a
// server is one flag.
func TestPostgresLocation(t *testing.T) {
	url := pgURL(t)
	file := exampleDB(t)

	r := runCLI(t, "", "--db", url, "sessions")
	if r.Code != cli.ExitNotFound || !strings.Contains(r.Stderr, "sessiondb import") {
		t.Fatalf("sessions on an empty schema: exit %d, stderr %q; want not_found with a hint to import", r.Code, r.Stderr)
	}
	mustCLI(t, "--db", url, "import", examplesFile)
	for _, args := range [][]string{
		{"--json", "sessions", "--limit", "50"},
		{"--json", "sessions", "--children", "--limit", "50"},
		{"--json", "search", "docker"},
		{"--json", "search", "deploy*"},
		{"--json", "stats"},
	} {
		onFile := comparable(t, mustCLI(t, append([]string{"--db", file}, args...)...))
		onServer := comparable(t, mustCLI(t, append([]string{"--db", url}, args...)...))
		if onFile.Stdout != onServer.Stdout {
			t.Errorf("sessiondb %s differs between a file and PostgreSQL:\nfile:     %s\npostgres: %s", strings.Join(args, " "), onFile.Stdout, onServer.Stdout)
		}
		if len(onFile.Stdout) < 10 {
			t.Errorf("sessiondb %s printed almost nothing: %q", strings.Join(args, " "), onFile.Stdout)
		}
	}

	t.Setenv("SESSIONDB_DATABASE_URL", url)
	t.Setenv("SESSIONDB_HOME", t.TempDir())
	viaEnv := mustCLI(t, "--json", "sessions", "--limit", "50")
	direct := mustCLI(t, "--db", url, "--json", "sessions", "--limit", "50")
	if viaEnv.Stdout != direct.Stdout {
		t.Errorf("SESSIONDB_DATABASE_URL did not select the server:\nenv:  %s\n--db: %s", viaEnv.Stdout, direct.Stdout)
	}
}

// comparable rewrites r's JSON for comparing backends: it drops the
// snippet of every search hit, since the backends mark matches alike but
// cut the window around them differently (FTS5's snippet() and
// PostgreSQL's ts_headline, see docs/postgres.md), and it rounds numbers
// to 12 significant digits, since sums of costs round differently in the
// last place (SQLite adds in row order, PostgreSQL exactly). Everything
// else must be equal.
func comparable(t *testing.T, r clitest.Result) clitest.Result {
	t.Helper()
	var v any
	decode(t, r, &v)
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "snippet")
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case float64:
			return strconv.FormatFloat(x, 'g', 12, 64)
		}
		return v
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		t.Fatal(err)
	}
	r.Stdout = string(b)
	return r
}
