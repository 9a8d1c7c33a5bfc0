package sqlite

import (
	"bytes"
	"database/sql"
	"strings"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// A newer Hermes' own trigram index, messages_fts_trigram (schema 10 on),
// is since schema 11 an FTS5 table holding its own copy of each message's
// text (content, tool name and tool calls joined by spaces), which its
// delete trigger removes by rowid: FTS5 reads the stored copy back and
// tokenizes it again to know which terms to take out.
//
// SQLite's trigram tokenizer read a text only up to its first NUL byte
// until 3.49.1, and reads past NUL bytes (skipping them) from 3.49.2. A
// newer Hermes stores multimodal content as a NUL, "json:", then the JSON,
// so a row that an SQLite before 3.49.2 indexed (Python's 3.40 on Debian
// 12) holds the terms of the text before the NUL, and a delete through
// SQLite 3.49.2 or later tries to take out terms of the whole text that
// were never put in: the index is left malformed for both SQLites (their
// 'integrity-check' fails, and SQLite 3.40 answers "database disk image
// is malformed"). The reverse holds for a row a newer SQLite indexed and
// an older one deletes.
//
// keepHermesTrigram makes such a delete exact whichever SQLite indexed
// each row: before the rows go, it rewrites the stored copy of every
// selected row holding a NUL to the text without NUL bytes that tokenizes
// into exactly the terms the row holds (the text before the first NUL for
// a row an older SQLite indexed, the text with its NULs taken out for a
// newer one), found by asking the index itself which of the two it holds.
// A text without NUL bytes is tokenized alike by every SQLite, so the
// delete that follows, by this SQLite or by Hermes', removes exactly what
// is there. The rows are deleted in the same transaction, so no one sees
// the rewritten copies.

const (
	hermesTrigramTable   = "messages_fts_trigram"
	hermesTrigramContent = hermesTrigramTable + "_content"
)

// keepHermesTrigram prepares, inside tx, the delete of the messages that
// where (a condition on the messages table, with args) selects from a
// newer Hermes' trigram index, as described above. A layout it cannot
// rewrite (schema 10's external-content index, or one of several
// columns) holding such rows fails invalid before anything is written,
// saying why and what to do.
func keepHermesTrigram(tx *sqlitedb.Tx, where string, args ...any) error {
	var create string
	err := tx.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", hermesTrigramTable).Scan(&create)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	if ftsTokenizer(create) != fts.Trigram {
		return nil
	}
	inline, err := ftsInline(tx, hermesTrigramTable)
	if err != nil {
		return err
	}
	if !inline {
		var n int64
		err := tx.QueryRow("SELECT count(*) FROM messages WHERE ("+where+") AND instr(CAST(COALESCE(content, '') || COALESCE(tool_name, '') || COALESCE(tool_calls, '') AS BLOB), X'00') > 0", args...).Scan(&n)
		if err != nil || n == 0 {
			return err
		}
		return sessiondb.Errorf(sessiondb.EINVALID, "%d of the messages to delete hold a NUL byte (a newer Hermes' multimodal content), and this file's trigram index (%s) keeps no copy of their text that sessiondb could make exact before the delete: SQLite before 3.49.2 and from 3.49.2 on read such text differently, so the delete would leave the index malformed; nothing was deleted. Delete them with Hermes, or open the file with a Hermes of schema 11 or later first (it rebuilds that index)", n, hermesTrigramTable)
	}
	return rewriteCopiesWithNUL(tx, hermesTrigramContent, "c.id IN (SELECT id FROM messages WHERE "+where+")", args, func(id int64, text []byte) (string, error) {
		return trigramIndexedText(tx, id, text)
	})
}

// rewriteCopiesWithNUL rewrites each stored copy of an inline FTS5
// table's content table (copies, alias c) that holds a NUL byte and passes
// cond (SQL over c, with args; "" for every copy) to what fix makes of it.
func rewriteCopiesWithNUL(tx *sqlitedb.Tx, copies, cond string, args []any, fix func(id int64, text []byte) (string, error)) error {
	if cond != "" {
		cond += " AND "
	}
	type row struct {
		id   int64
		text []byte
	}
	rows, err := sqlitedb.Append(tx.Context(), tx, "SELECT c.id, CAST(c.c0 AS BLOB) FROM "+copies+" c WHERE "+cond+"instr(CAST(c.c0 AS BLOB), X'00') > 0", args, nil, func(r sqlitedb.Row) (row, error) {
		var x row
		err := r.Scan(&x.id, &x.text)
		return x, err
	})
	if err != nil {
		return err
	}
	for _, r := range rows {
		text, err := fix(r.id, r.text)
		if err != nil {
			return err
		}
		if _, err := tx.Exec("UPDATE "+copies+" SET c0 = ? WHERE id = ?", text, r.id); err != nil {
			return err
		}
	}
	return nil
}

// trigramIndexedText returns the text without NUL bytes that the trigram
// tokenizer of any SQLite reads as the index holds row id's text (stored
// holding a NUL): before its first NUL when an SQLite before 3.49.2
// indexed it, with its NULs taken out when a later one did. The index
// says which: a later SQLite's reading has a term that crosses the first
// NUL (or, with fewer than three characters before it, the first term of
// all), so the phrase of the text's first characters up to just past the
// NUL, at least three, matches at the row's first position only then.
func trigramIndexedText(tx *sqlitedb.Tx, id int64, stored []byte) (string, error) {
	nul := bytes.IndexByte(stored, 0)
	before := stored[:nul]
	without := bytes.ReplaceAll(stored, []byte{0}, nil)
	n := max(utf8.RuneCount(before)+1, 3)
	if utf8.RuneCount(without) < n {
		// Both readings give the same terms (none past the NUL).
		return string(before), nil
	}
	phrase := without
	for i := 0; i < n; i++ {
		_, size := utf8.DecodeRune(phrase)
		phrase = phrase[size:]
	}
	phrase = without[:len(without)-len(phrase)]
	if !utf8.Valid(phrase) {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "message %d's text in %s is not valid UTF-8 before and around its NUL byte, so sessiondb cannot tell which SQLite indexed it and delete it exactly; nothing was deleted. Delete it with Hermes", id, hermesTrigramTable)
	}
	var later bool
	err := tx.QueryRow("SELECT EXISTS (SELECT 1 FROM "+hermesTrigramTable+" WHERE "+hermesTrigramTable+" MATCH ? AND rowid = ?)",
		`^"`+strings.ReplaceAll(string(phrase), `"`, `""`)+`"`, id).Scan(&later)
	if err != nil {
		return "", err
	}
	if later {
		return string(without), nil
	}
	return string(before), nil
}

// hermesFTSText is what a newer Hermes' inline full-text tables (schema 11
// on) index for a message: its content, tool name and tool calls joined by
// spaces, as its insert triggers write them (on new.*) and its own rebuild
// does (on the row).
const hermesFTSText = "COALESCE(content, '') || ' ' || COALESCE(tool_name, '') || ' ' || COALESCE(tool_calls, '')"

// hermesFTSTables are a newer Hermes' full-text tables over the messages,
// in the order a rebuild takes them.
var hermesFTSTables = []string{"messages_fts", hermesTrigramTable}

// rebuildHermesFTS rebuilds, inside tx, the full-text tables of a file of a
// newer Hermes (schema 7 on) from the messages, as Hermes' own rebuild
// does, and keeps each table as it is (its definition, its triggers):
//
//   - An external-content table (schema 7 to 10; its text is the messages'
//     content) gets FTS5's 'rebuild', which reads the messages. Schema 10's
//     trigram table over messages holding a NUL byte is refused: the text
//     it would index is read differently by SQLite before and from 3.49.2
//     (keepHermesTrigram), and it keeps no copy that could be made the same.
//   - An inline table (schema 11 on) gets its stored copies written again
//     from the messages (hermesFTSText; in the trigram table without NUL
//     bytes, which every SQLite tokenizes alike), then FTS5's 'rebuild',
//     which indexes those copies. A table whose insert trigger indexes
//     something else (a Hermes newer than this code) is refused.
//
// A rebuild never reads the old index, so it also cures a damaged one.
func rebuildHermesFTS(tx *sqlitedb.Tx) error {
	for _, t := range hermesFTSTables {
		var create string
		err := tx.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", t).Scan(&create)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return err
		}
		inline, err := ftsInline(tx, t)
		if err != nil {
			return err
		}
		trigram := ftsTokenizer(create) == fts.Trigram
		switch {
		case !inline && trigram:
			var n int64
			if err := tx.QueryRow("SELECT count(*) FROM messages WHERE instr(CAST(content AS BLOB), X'00') > 0").Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "%s indexes the messages' own text, and %d of them hold a NUL byte (a newer Hermes' multimodal content), which SQLite before 3.49.2 and from 3.49.2 on index differently: a rebuild here would leave an index that an older SQLite's Hermes cannot keep; nothing was rebuilt. Open the file with a Hermes of schema 11 or later, which rebuilds it", t, n)
			}
		case inline:
			var trigger string
			err := tx.QueryRow("SELECT COALESCE(group_concat(sql, ' '), '') FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' AND sql LIKE '%INSERT INTO ' || ? || '(rowid%'", t).Scan(&trigger)
			if err != nil {
				return err
			}
			if !strings.Contains(trigger, strings.ReplaceAll(hermesFTSText, "COALESCE(", "COALESCE(new.")) {
				return sessiondb.Errorf(sessiondb.EINVALID, "%s is kept by triggers that index something other than what Hermes' schema 11 to 21 index (content, tool name and tool calls), so sessiondb does not know what to rebuild it from; nothing was rebuilt. Let Hermes repair it (`hermes sessions repair`)", t)
			}
			if err := fillFTSCopies(tx, t, trigram); err != nil {
				return err
			}
		}
		if _, err := tx.Exec("INSERT INTO " + quoteIdent(t) + "(" + quoteIdent(t) + ") VALUES('rebuild')"); err != nil {
			return err
		}
	}
	return nil
}

// ftsInline reports whether the FTS5 table t keeps its own copy of its
// one column (t_content with c0), as a newer Hermes' tables do from schema
// 11 on.
func ftsInline(tx *sqlitedb.Tx, t string) (bool, error) {
	var cols, copyCols int
	err := tx.QueryRow("SELECT (SELECT count(*) FROM pragma_table_info(?)), (SELECT count(*) FROM pragma_table_info(?) WHERE name = 'c0')", t, t+"_content").Scan(&cols, &copyCols)
	return cols == 1 && copyCols == 1, err
}

// fillFTSCopies writes the stored copies of the inline table t again from
// the messages, every message one row (hermesFTSText), without NUL bytes
// when noNUL.
func fillFTSCopies(tx *sqlitedb.Tx, t string, noNUL bool) error {
	copies := quoteIdent(t + "_content")
	if _, err := tx.Exec("DELETE FROM " + copies); err != nil {
		return err
	}
	if _, err := tx.Exec("INSERT INTO " + copies + "(id, c0) SELECT id, " + hermesFTSText + " FROM messages"); err != nil {
		return err
	}
	if !noNUL {
		return nil
	}
	// SQLite's replace() cannot take a NUL out.
	return rewriteCopiesWithNUL(tx, copies, "", nil, func(_ int64, text []byte) (string, error) {
		return string(bytes.ReplaceAll(text, []byte{0}, nil)), nil
	})
}
