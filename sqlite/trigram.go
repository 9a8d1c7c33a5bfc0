package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// The opt-in trigram index (IMP-10) finds CJK text, which unicode61 cannot
// split into words, without scanning every message with LIKE. It indexes
// the content of non-tool messages of non-cron sessions (never tool_calls)
// through a view, with triggers in the same transaction as the rows
// (IMP-4). Rows that existed when it was created are indexed by a backfill
// in id batches of at most trigramBatch, one transaction each, below a
// high-water mark kept in state_meta; the triggers leave exactly that
// not-yet-backfilled id range to the backfill, so no row is ever indexed
// twice or deleted from the index without having been added. Search uses
// it only once the backfill is complete. Its names cannot clash with
// newer Hermes' own messages_fts_trigram.

const (
	trigramTable  = "sessiondb_fts_trigram"
	trigramBatch  = 5000
	metaHighWater = "sessiondb.trigram.high_water"
	metaBackfill  = "sessiondb.trigram.backfilled"
)

// trigramIndexed is true for a message row (alias r: new or old) the index
// covers: not a tool row, its session not cron, and outside the id range
// the backfill still owes.
func trigramIndexed(r string) string {
	return r + `.role <> 'tool'
    AND (SELECT source FROM sessions WHERE id = ` + r + `.session_id) <> 'cron'
    AND (` + r + `.id > (SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = '` + metaHighWater + `')
      OR ` + r + `.id <= (SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = '` + metaBackfill + `'))`
}

// trigramText is the SQL for the text the trigram index holds for a
// message's content c: the content without a leading NUL byte (a newer
// Hermes' multimodal content is a NUL, then "json:" and the JSON), cut at
// any further NUL. SQLite's trigram tokenizer stopped reading at a NUL
// until 3.49.1 and reads past it from 3.49.2, so an index of text holding
// one, written by one of them, fails the other's integrity check, and a
// delete by the other errs or leaves terms behind; text without NUL is
// tokenized alike by both, so this index works whichever SQLite writes and
// reads it. It is computed on the bytes (a blob): SQLite before 3.49
// cannot replace() a NUL, and its text functions stop at one.
func trigramText(c string) string {
	b := "CAST(" + c + " AS BLOB)"
	rest := "(CASE WHEN substr(" + b + ", 1, 1) = X'00' THEN substr(" + b + ", 2) ELSE " + b + " END)"
	return "CAST(CASE WHEN instr(" + rest + ", X'00') > 0 THEN substr(" + rest + ", 1, instr(" + rest + ", X'00') - 1) ELSE " + rest + " END AS TEXT)"
}

// trigramNULFree is in the view of an index built with trigramText.
const trigramNULFree = "X'00'"

func trigramSchema() string {
	return `CREATE TABLE IF NOT EXISTS state_meta (key TEXT PRIMARY KEY, value TEXT);

CREATE VIEW IF NOT EXISTS sessiondb_fts_trigram_src AS
    SELECT m.id AS id, ` + trigramText("m.content") + ` AS content FROM messages m JOIN sessions s ON s.id = m.session_id
    WHERE m.role <> 'tool' AND s.source <> 'cron';

CREATE VIRTUAL TABLE IF NOT EXISTS sessiondb_fts_trigram USING fts5(
    content,
    content='sessiondb_fts_trigram_src',
    content_rowid='id',
    tokenize='trigram'
);

CREATE TRIGGER IF NOT EXISTS sessiondb_fts_trigram_insert AFTER INSERT ON messages
WHEN ` + trigramIndexed("new") + `
BEGIN
    INSERT INTO sessiondb_fts_trigram(rowid, content) VALUES (new.id, ` + trigramText("new.content") + `);
END;

CREATE TRIGGER IF NOT EXISTS sessiondb_fts_trigram_delete AFTER DELETE ON messages
WHEN ` + trigramIndexed("old") + `
BEGIN
    INSERT INTO sessiondb_fts_trigram(sessiondb_fts_trigram, rowid, content) VALUES('delete', old.id, ` + trigramText("old.content") + `);
END;

CREATE TRIGGER IF NOT EXISTS sessiondb_fts_trigram_update AFTER UPDATE ON messages BEGIN
    INSERT INTO sessiondb_fts_trigram(sessiondb_fts_trigram, rowid, content)
        SELECT 'delete', old.id, ` + trigramText("old.content") + ` WHERE ` + trigramIndexed("old") + `;
    INSERT INTO sessiondb_fts_trigram(rowid, content)
        SELECT new.id, ` + trigramText("new.content") + ` WHERE ` + trigramIndexed("new") + `;
END;
`
}

// versionAtLeast reports whether an SQLite version string ("3.54.1") is
// major.minor or later: the trigram tokenizer came in 3.34,
// contentless_delete as the recent index needs it in 3.54.
func versionAtLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	x, err1 := strconv.Atoi(parts[0])
	y, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (x > major || (x == major && y >= minor))
}

// createTrigram adds the index to a writable v6 file, recording the
// high-water mark (the largest message id now) in the same transaction as
// the triggers, so every later row is the triggers' and every earlier one
// the backfill's.
func createTrigram(tx *sqlitedb.Tx) error {
	var one int
	err := tx.QueryRow("SELECT 1 FROM sqlite_master WHERE name = ?", trigramTable).Scan(&one)
	if err == nil {
		return nil // another process made it meanwhile
	}
	if err != sql.ErrNoRows {
		return err
	}
	if err := tx.ExecScript("CREATE TABLE IF NOT EXISTS state_meta (key TEXT PRIMARY KEY, value TEXT)"); err != nil {
		return err
	}
	var hw sql.NullInt64
	if err := tx.QueryRow("SELECT max(id) FROM messages").Scan(&hw); err != nil {
		return err
	}
	for k, v := range map[string]int64{metaHighWater: hw.Int64, metaBackfill: 0} {
		if _, err := tx.Exec("INSERT INTO state_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", k, strconv.FormatInt(v, 10)); err != nil {
			return err
		}
	}
	return tx.ExecScript(trigramSchema())
}

// upgradeTrigram rebuilds a trigram index made before trigramText (its view
// indexes the content as it is, NUL bytes and all): view and triggers
// replaced, the index rebuilt from the new view, and the backfill marked
// complete (the rebuild indexed every row), in one transaction.
func upgradeTrigram(tx *sqlitedb.Tx) error {
	var view sql.NullString
	if err := tx.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'view' AND name = 'sessiondb_fts_trigram_src'").Scan(&view); err != nil && err != sql.ErrNoRows {
		return err
	}
	if strings.Contains(view.String, trigramNULFree) {
		return nil // another process did it meanwhile
	}
	if err := tx.ExecScript(`DROP VIEW IF EXISTS sessiondb_fts_trigram_src;
DROP TRIGGER IF EXISTS sessiondb_fts_trigram_insert;
DROP TRIGGER IF EXISTS sessiondb_fts_trigram_delete;
DROP TRIGGER IF EXISTS sessiondb_fts_trigram_update;`); err != nil {
		return err
	}
	if err := tx.ExecScript(trigramSchema()); err != nil {
		return err
	}
	if _, err := tx.Exec("INSERT INTO sessiondb_fts_trigram(sessiondb_fts_trigram) VALUES('rebuild')"); err != nil {
		return err
	}
	_, err := tx.Exec("UPDATE state_meta SET value = (SELECT value FROM state_meta WHERE key = ?) WHERE key = ?", metaHighWater, metaBackfill)
	return err
}

// trigramProgress reads the backfill's position and goal.
func (s *Store) trigramProgress(ctx context.Context) (done, highWater int64, err error) {
	found := 0
	err = sqlitedb.Each(ctx, s.db, "SELECT key, CAST(value AS INTEGER) FROM state_meta WHERE key IN (?, ?)", []any{metaHighWater, metaBackfill}, func(r sqlitedb.Row) error {
		var k string
		var v int64
		if err := r.Scan(&k, &v); err != nil {
			return err
		}
		if k == metaHighWater {
			highWater = v
		} else {
			done = v
		}
		found++
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if found < 2 {
		return 0, 0, sessiondb.Errorf(sessiondb.EINTERNAL, "trigram index has no progress record in state_meta")
	}
	return done, highWater, nil
}

// BackfillTrigram indexes the rows that predate the trigram index, one
// batch of at most 5000 ids per transaction, until done or ctx ends. It
// reports whether the index is complete. Without a trigram index it
// returns false and no error.
func (s *Store) BackfillTrigram(ctx context.Context) (bool, error) {
	if !s.si.tables[trigramTable] {
		return false, nil
	}
	for {
		done, hw, err := s.trigramProgress(ctx)
		if err != nil {
			return false, s.readErr(err, "trigram backfill")
		}
		if done >= hw {
			s.trigramReady.Store(true)
			return true, nil
		}
		if err := ctx.Err(); err != nil {
			return false, sqlitedb.Wrap(err, "trigram backfill")
		}
		upto := min(done+trigramBatch, hw)
		err = s.write(ctx, "trigram backfill", func(tx *sqlitedb.Tx) error {
			// Re-read inside the transaction: another process may be
			// backfilling the same file.
			var cur int64
			if err := tx.QueryRow("SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = ?", metaBackfill).Scan(&cur); err != nil {
				return err
			}
			if cur != done {
				return nil
			}
			if _, err := tx.Exec("INSERT INTO sessiondb_fts_trigram(rowid, content) SELECT id, content FROM sessiondb_fts_trigram_src WHERE id > ? AND id <= ?", done, upto); err != nil {
				return err
			}
			_, err := tx.Exec("UPDATE state_meta SET value = ? WHERE key = ?", strconv.FormatInt(upto, 10), metaBackfill)
			return err
		})
		if err != nil {
			return false, err
		}
	}
}

// backfillInBackground runs BackfillTrigram until it completes or the
// store closes, pausing between failed attempts.
func (s *Store) backfillInBackground() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopBackfill = cancel
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		for {
			ok, err := s.BackfillTrigram(ctx)
			if ok || ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Warn("trigram backfill", "path", s.path, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// trigramMatch turns the CJK fallback's query into a trigram MATCH
// expression: every term quoted as a phrase (inner quotes doubled),
// AND/OR/NOT kept between terms. ok is false when some term is shorter
// than three characters, which a trigram index cannot find; LIKE serves
// those.
func trigramMatch(q string) (string, bool) {
	r := strings.TrimSpace(strings.Trim(q, `"`))
	var parts []string
	terms := 0
	for _, t := range strings.Fields(r) {
		switch t {
		case "AND", "OR", "NOT":
			if len(parts) > 0 && !isOperator(parts[len(parts)-1]) {
				parts = append(parts, t)
			}
			continue
		}
		t = strings.Trim(t, `"`)
		if t == "" {
			continue
		}
		if utf8.RuneCountInString(t) < 3 {
			return "", false
		}
		parts = append(parts, `"`+strings.ReplaceAll(t, `"`, `""`)+`"`)
		terms++
	}
	for len(parts) > 0 && isOperator(parts[len(parts)-1]) {
		parts = parts[:len(parts)-1]
	}
	if terms == 0 {
		return "", false
	}
	return strings.Join(parts, " "), true
}

func isOperator(s string) bool { return s == "AND" || s == "OR" || s == "NOT" }
