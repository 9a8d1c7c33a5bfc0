package postgres

import (
	"context"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// WithSchema returns the postgres:// URL u with its search_path set to
// schema: the location of a store in that schema, for Open and for
// open.History.
func WithSchema(u, schema string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "%q is not a postgres:// URL", redact(u, u))
	}
	q := p.Query()
	q.Set("search_path", schema)
	p.RawQuery = q.Encode()
	return p.String(), nil
}

// schemaOf connects to u and returns the connection and the schema its
// search_path names (its first entry).
func schemaOf(ctx context.Context, u string) (*pgx.Conn, string, error) {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return nil, "", sessiondb.Errorf(sessiondb.EINVALID, "%s", redact(err.Error(), u))
	}
	sp := cfg.RuntimeParams["search_path"]
	schema := strings.Trim(strings.TrimSpace(strings.Split(sp, ",")[0]), `"`)
	if schema == "" {
		return nil, "", sessiondb.Errorf(sessiondb.EINVALID, "the URL names no schema (search_path)")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, "", sessiondb.Wrap(Code(err), err, "connect")
	}
	return conn, schema, nil
}

// DropSchema drops the schema the URL's search_path names, with every
// table of the store in it: the end of a scratch store (benchmarks,
// tests). A URL without search_path is refused, so the public schema is
// never dropped by accident.
func DropSchema(ctx context.Context, u string) error {
	conn, schema, err := schemaOf(ctx, u)
	if err != nil {
		return sessiondb.Wrap("", err, "drop schema")
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+quoteIdent(schema)+" CASCADE"); err != nil {
		return sessiondb.Wrap(Code(err), err, "drop schema %s", schema)
	}
	return nil
}

// SchemaSize returns the bytes the tables of the URL's schema take on the
// server, indexes and TOAST included.
func SchemaSize(ctx context.Context, u string) (int64, error) {
	conn, schema, err := schemaOf(ctx, u)
	if err != nil {
		return 0, sessiondb.Wrap("", err, "schema size")
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint
FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
WHERE ns.nspname = $1 AND c.relkind IN ('r', 'm')`, schema).Scan(&n)
	if err != nil {
		return 0, sessiondb.Wrap(Code(err), err, "size of schema %s", schema)
	}
	return n, nil
}
