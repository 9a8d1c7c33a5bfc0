package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// integrityLines runs PRAGMA integrity_check on q and returns its own lines:
// one "ok" for a sound file. SQLite can report lines and then fail (a page it
// cannot read); the lines come back with the failure as a last line. A file
// whose damage stops the check before its first line (a garbage page 1, a
// truncated file) gives that failure as its one line. Other errors (the
// context ended, a lock) are returned.
func integrityLines(ctx context.Context, q sqlitedb.Querier) ([]string, error) {
	var lines []string
	err := sqlitedb.Each(ctx, q, "PRAGMA integrity_check", nil, func(r sqlitedb.Row) error {
		var l string
		if err := r.Scan(&l); err != nil {
			return err
		}
		// Newer SQLite gives the complaints about one b-tree as one row of
		// lines.
		lines = append(lines, strings.Split(l, "\n")...)
		return nil
	})
	switch {
	case err == nil:
		return lines, nil
	case sqlitedb.IsCorrupt(err) || len(lines) > 0 && !sqlitedb.IsBusy(err) && ctx.Err() == nil:
		return append(lines, "integrity_check stopped: "+err.Error()), nil
	}
	return nil, err
}

// CheckFile runs SQLite's integrity_check on the database at path without
// opening it as a store: for a file Open refuses as damaged, to say what the
// damage is. It reads only (sqlitedb.OpenReader: nothing created or changed)
// and returns integrity_check's lines as IntegrityCheck does; a file SQLite
// cannot even begin to read gives one line saying why.
func CheckFile(ctx context.Context, path string) ([]string, error) {
	db, err := sqlitedb.OpenReader(sqlitedb.Config{Path: path, Pragmas: []string{"PRAGMA busy_timeout=5000"}}, func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, "SELECT count(*) FROM sqlite_master")
		return err
	})
	if err != nil {
		if sqlitedb.IsCorrupt(err) {
			if d := sqlitedb.DescribeNonDatabase(path); d != "" {
				return []string{d}, nil
			}
			return []string{"SQLite cannot read the file's schema (page 1): " + err.Error()}, nil
		}
		return nil, openErr(err, path, "read")
	}
	defer db.Close()
	lines, err := integrityLines(ctx, db)
	if err != nil {
		return nil, sqlitedb.Wrap(err, "integrity check of %s", path)
	}
	return lines, nil
}

// fts5Complaint matches integrity_check's line about a full-text table
// whose index does not match its text (SQLite 3.44 and later).
var fts5Complaint = regexp.MustCompile(`malformed inverted index for FTS5 table (\w+)\.("(?:[^"]|"")*"|\S+)`)

// ExplainIntegrity sorts integrity_check's lines (from IntegrityCheck) into
// damage and version skew (see sessiondb.SQLiteMaintainer). A trigram
// index written by SQLite older than 3.49.2, which stopped reading a text at
// its first NUL byte, fails this SQLite's check (3.49.2 and later read past
// the NUL) on every row holding one, as a newer Hermes' multimodal content
// ("\x00json:...") does, although nothing is damaged. Such a complaint is
// skew when the index holds exactly what the older SQLite writes for the
// table's text: each row's text cut at its first NUL, indexed again in a
// temporary table and compared term by term, position by position.
func (s *Store) ExplainIntegrity(ctx context.Context, lines []string) (damage, skew []string, err error) {
	version, err := sqlitedb.Version(ctx, s.db)
	if err != nil {
		return nil, nil, s.readErr(err, "read SQLite version")
	}
	for _, l := range lines {
		m := fts5Complaint.FindStringSubmatch(l)
		if m == nil {
			damage = append(damage, l)
			continue
		}
		table := strings.ReplaceAll(strings.Trim(m[2], `"`), `""`, `"`)
		nulRows, same, err := s.trigramSkew(ctx, m[1], table)
		if err != nil {
			return nil, nil, err
		}
		if !same {
			damage = append(damage, l)
			continue
		}
		skew = append(skew, fmt.Sprintf("%s: the trigram index was written by SQLite older than 3.49.2, which stops reading a text at a NUL byte (%d rows hold one, e.g. a newer Hermes' multimodal content); SQLite %s reads past it and calls the index malformed. Not damage: the program that wrote it reads it correctly, and it matches that SQLite's reading of every row",
			table, nulRows, version))
	}
	return damage, skew, nil
}

// trigramSkew reports whether the FTS5 table schema.table is a trigram
// index holding exactly what SQLite before 3.49.2 writes for its text, and
// how many of its rows hold a NUL byte (none: no skew to explain).
func (s *Store) trigramSkew(ctx context.Context, schema, table string) (nulRows int64, same bool, err error) {
	var create sql.NullString
	err = s.db.QueryRowContext(ctx, "SELECT sql FROM "+quoteIdent(schema)+".sqlite_master WHERE name = ? AND type = 'table'", table).Scan(&create)
	if err == sql.ErrNoRows || err == nil && ftsTokenizer(create.String) != fts.Trigram {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.readErr(err, "inspect %s", table)
	}
	tok := tokenizeArg(create.String)
	var cols []string
	err = sqlitedb.Each(ctx, s.db, "SELECT name FROM pragma_table_info(?, ?) ORDER BY cid", []any{table, schema}, func(r sqlitedb.Row) error {
		var c string
		if err := r.Scan(&c); err != nil {
			return err
		}
		cols = append(cols, quoteIdent(c))
		return nil
	})
	if err != nil || len(cols) == 0 {
		return 0, false, s.readErr(err, "inspect %s", table)
	}
	t := quoteIdent(schema) + "." + quoteIdent(table)
	var hasNUL []string
	for _, c := range cols {
		hasNUL = append(hasNUL, "instr(CAST("+c+" AS BLOB), X'00') > 0")
	}
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM "+t+" WHERE "+strings.Join(hasNUL, " OR ")).Scan(&nulRows); err != nil {
		return 0, false, s.readErr(err, "read %s", table)
	}
	if nulRows == 0 {
		return 0, false, nil
	}
	// One connection: the temporary tables live on it.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, false, s.readErr(err, "check %s", table)
	}
	defer conn.Close()
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp.sessiondb_skew_v; DROP TABLE IF EXISTS temp.sessiondb_skew_old; DROP TABLE IF EXISTS temp.sessiondb_skew")
	var cut []string
	for _, c := range cols {
		cut = append(cut, "CASE WHEN instr(CAST("+c+" AS BLOB), X'00') > 0 THEN CAST(substr(CAST("+c+" AS BLOB), 1, instr(CAST("+c+" AS BLOB), X'00') - 1) AS TEXT) ELSE "+c+" END")
	}
	for _, q := range []string{
		"CREATE VIRTUAL TABLE temp.sessiondb_skew USING fts5(" + strings.Join(cols, ", ") + ", tokenize=" + tok + ")",
		"INSERT INTO temp.sessiondb_skew(rowid, " + strings.Join(cols, ", ") + ") SELECT rowid, " + strings.Join(cut, ", ") + " FROM " + t,
		"CREATE VIRTUAL TABLE temp.sessiondb_skew_old USING fts5vocab(" + quoteIdent(schema) + ", " + quoteIdent(table) + ", 'instance')",
		"CREATE VIRTUAL TABLE temp.sessiondb_skew_v USING fts5vocab(temp, sessiondb_skew, 'instance')",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nulRows, false, s.readErr(err, "check %s for version skew", table)
		}
	}
	var diff int64
	err = conn.QueryRowContext(ctx, `SELECT count(*) FROM (
    SELECT term, doc, col, offset FROM temp.sessiondb_skew_old EXCEPT SELECT term, doc, col, offset FROM temp.sessiondb_skew_v
    UNION ALL
    SELECT term, doc, col, offset FROM temp.sessiondb_skew_v EXCEPT SELECT term, doc, col, offset FROM temp.sessiondb_skew_old)`).Scan(&diff)
	if err != nil {
		if sqlitedb.IsCorrupt(err) {
			return nulRows, false, nil // the index cannot even be listed: damage
		}
		return nulRows, false, s.readErr(err, "check %s for version skew", table)
	}
	return nulRows, diff == 0, nil
}

// tokenizeArg returns the tokenize= argument of an FTS5 CREATE statement as
// written ('trigram' when there is none to copy).
func tokenizeArg(create string) string {
	m := regexp.MustCompile(`(?i)tokenize\s*=\s*('(?:[^']|'')*'|"(?:[^"]|"")*"|\w+)`).FindStringSubmatch(create)
	if m == nil {
		return "'trigram'"
	}
	return m[1]
}

// LibraryVersion returns the linked SQLite library's version, "" if it
// cannot be read.
func LibraryVersion(ctx context.Context) string { return sqlitedb.LibraryVersion(ctx) }
