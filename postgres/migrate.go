package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

//go:embed migrations
var migrationFiles embed.FS

// migrationSet is the embedded migrations of one kind of store, with the
// ledger table recording them in a schema. Sets of different kinds may
// share a schema.
type migrationSet struct {
	dir    string // under migrations/
	ledger string
	what   string // the kind of store, for messages
}

var (
	historyMigrations  = migrationSet{dir: "migrations/history", ledger: "sessiondb_migrations", what: "history store"}
	subagentMigrations = migrationSet{dir: "migrations/subagents", ledger: "sessiondb_subagent_migrations", what: "subagent store"}
)

// migration is one embedded step: <dir>/NNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the set's steps in version order.
func (set migrationSet) migrations() ([]migration, error) {
	paths, err := fs.Glob(migrationFiles, set.dir+"/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, p := range paths {
		base := strings.TrimSuffix(strings.TrimPrefix(p, set.dir+"/"), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s is not named NNN_name.sql", p)
		}
		b, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := range out {
		if out[i].version != i+1 {
			return nil, fmt.Errorf("migration versions must run 1, 2, 3...: %d is missing", i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the newest migration of the history store this package
// applies.
func SchemaVersion() int { return historyMigrations.version() }

// version is the newest migration of the set.
func (set migrationSet) version() int {
	ms, err := set.migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrationLockKey is the advisory lock every migration takes, one key for
// the whole database: extensions are per database, so two stores in
// different schemas must not create them at once either.
const migrationLockKey = 0x5e55_10db_0001

// withMigrationLock runs fn in a transaction holding the migration lock.
func (s *conn) withMigrationLock(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLockKey)); err != nil {
			return err
		}
		return fn(tx)
	})
}

// appliedVersion reads the newest version in the ledger through q; 0 when
// the schema has no ledger yet.
func appliedVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, ledger string) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", ledger).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := q.QueryRow(ctx, "SELECT COALESCE(max(version), 0) FROM "+ledger).Scan(&v)
	return v, err
}

// migrate applies the embedded migrations the schema lacks, each in one
// transaction of its own under the migration lock, recording each in the
// ledger. A schema already up to date is only read: no lock, no write. A
// schema migrated by a newer sessiondb (a version this package does not
// know) is used as it is.
func (s *conn) migrate(ctx context.Context, set migrationSet) error {
	ms, err := set.migrations()
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "migrate %s", s.schema)
	}
	have, err := appliedVersion(ctx, s.pool, set.ledger)
	if err != nil {
		return s.classify(err, "migrate %s: read the ledger", s.schema)
	}
	for _, m := range ms {
		if m.version <= have {
			continue
		}
		err := s.withMigrationLock(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+set.ledger+
				" (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"); err != nil {
				return err
			}
			// Another process may have applied it while we waited.
			now, err := appliedVersion(ctx, tx, set.ledger)
			if err != nil || now >= m.version {
				return err
			}
			script, err := s.expand(ctx, tx, m.sql)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, script); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, "INSERT INTO "+set.ledger+" (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return s.classify(err, "migrate %s: %s step %d (%s)", s.schema, set.what, m.version, m.name)
		}
	}
	return nil
}

// checkMigrated fails a read-only open of a schema without a store.
func (s *conn) checkMigrated(ctx context.Context, set migrationSet) error {
	have, err := appliedVersion(ctx, s.pool, set.ledger)
	if err != nil {
		return s.classify(err, "open %s read-only", s.schema)
	}
	if want := set.version(); have < want {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "open %s read-only: the schema holds no up-to-date %s (version %d, want %d); open it once read-write to create or migrate it", s.schema, set.what, have, want)
	}
	return nil
}

// checkExists fails (not_found) when the schema holds no store at all.
func (s *conn) checkExists(ctx context.Context, set migrationSet) error {
	have, err := appliedVersion(ctx, s.pool, set.ledger)
	if err != nil {
		return s.classify(err, "open %s", s.schema)
	}
	if have == 0 {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "no %s in schema %s", set.what, s.schema)
	}
	return nil
}

// extensions are the contrib extensions the schema needs: pg_trgm for the
// substring index, unaccent for folding diacritics in the word index.
var extensions = []string{"pg_trgm", "unaccent"}

// expand replaces {{ext}} in a migration with the schema holding that
// extension, creating the extension (in public) when the database lacks
// it. Extensions belong to the database, not to our schema, so dropping a
// store's schema never drops them from under another store.
func (s *conn) expand(ctx context.Context, tx pgx.Tx, script string) (string, error) {
	for _, ext := range extensions {
		key := "{{" + strings.TrimPrefix(ext, "pg_") + "}}"
		if !strings.Contains(script, key) {
			continue
		}
		var where string
		err := tx.QueryRow(ctx, "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = $1", ext).Scan(&where)
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err := tx.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+ext+" SCHEMA public"); err != nil {
				return "", sessiondb.Wrap(Code(err), err, "the extension %s is missing and could not be created (install PostgreSQL's contrib package, or have an administrator run CREATE EXTENSION %s)", ext, ext)
			}
			where = "public"
		} else if err != nil {
			return "", err
		}
		// regnamespace::text is already quoted where needed.
		script = strings.ReplaceAll(script, key, where)
	}
	return script, nil
}
