package sqlite

import (
	"context"
	"slices"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// metaKey is the Kind of an Addition that is a key of state_meta.
const metaKey = "state_meta key"

// additions is every object and state_meta key sessiondb may add to a
// Hermes state.db, the one list that doctor prints, the README states and
// TestAdditionsAreWhatAWriteAdds holds against what a first write really
// adds. Only a file of schema 6 or older (which sessiondb migrates to 6)
// gets any: a newer Hermes' file is never given them. state_meta itself is
// Hermes' own table from a later schema; on a v6 file sessiondb makes it to
// hold its keys.
var additions = func() []sessiondb.Addition {
	var a []sessiondb.Addition
	add := func(kind, name, what string) { a = append(a, sessiondb.Addition{Kind: kind, Name: name, For: what}) }
	const reads = "reads that stay fast as the store grows"
	for _, ix := range readIndexes {
		add("index", ix.name, reads)
	}
	const last = "listing by last activity"
	for _, o := range lastActiveObjects {
		if o.name != "state_meta" { // listed once, below
			add(ddlKind(o.ddl), o.name, last)
		}
	}
	add("index", "sqlite_autoindex_"+lastActiveTable+"_1", last+", its primary key")
	add("index", "sqlite_autoindex_"+lastActiveDirty+"_1", last+", its chains' primary key")
	add(metaKey, lastActiveMark, last+", the last message it took in")
	add("table", "state_meta", "holds sessiondb's keys (a newer Hermes makes its own)")
	add("index", "sqlite_autoindex_state_meta_1", "state_meta's primary key")
	const recent = "the recent search index (a large store's search)"
	add("table", recentTable, recent)
	for _, sh := range fts5Shadows {
		add("table", recentTable+sh, recent+", FTS5's storage")
	}
	add("table", recentChanged, recent+", its change log")
	for _, tr := range recentTriggers() {
		add("trigger", tr, recent)
	}
	add(metaKey, metaRecentLow, recent)
	add(metaKey, metaRecentHigh, recent)
	const tri = "the opt-in trigram search index"
	add("view", trigramTable+"_src", tri+", the text it indexes")
	add("table", trigramTable, tri)
	for _, sh := range fts5Shadows {
		add("table", trigramTable+sh, tri+", FTS5's storage")
	}
	for _, tr := range []string{trigramTable + "_insert", trigramTable + "_delete", trigramTable + "_update"} {
		add("trigger", tr, tri)
	}
	add(metaKey, metaHighWater, tri)
	add(metaKey, metaBackfill, tri)
	add(metaKey, retentionKey, "the time of the last retention run")
	return a
}()

// fts5Shadows are the tables FTS5 makes for an index without its own copy
// of the text, as both of ours are.
var fts5Shadows = []string{"_data", "_idx", "_docsize", "_config"}

// ddlKind is the sqlite_master type a CREATE statement makes.
func ddlKind(ddl string) string {
	for _, k := range []string{"TRIGGER", "INDEX", "VIEW"} {
		if strings.Contains(ddl, "CREATE "+k) {
			return strings.ToLower(k)
		}
	}
	return "table"
}

// Additions lists the entries of additions the file holds now.
func (s *Store) Additions(ctx context.Context) ([]sessiondb.Addition, error) {
	objects := map[string]string{}
	if err := sqlitedb.Each(ctx, s.db, "SELECT type, name FROM sqlite_master", nil, func(r sqlitedb.Row) error {
		var kind, name string
		err := r.Scan(&kind, &name)
		objects[name] = kind
		return err
	}); err != nil {
		return nil, sessiondb.Wrap("", err, "list sessiondb's additions to %s", s.path)
	}
	keys := map[string]bool{}
	if objects["state_meta"] == "table" {
		if err := sqlitedb.Each(ctx, s.db, "SELECT key FROM state_meta WHERE key LIKE 'sessiondb%'", nil, func(r sqlitedb.Row) error {
			var k string
			err := r.Scan(&k)
			keys[k] = true
			return err
		}); err != nil {
			return nil, sessiondb.Wrap("", err, "list sessiondb's keys in %s", s.path)
		}
	}
	// A newer Hermes' file is given no object: those it holds under our
	// names (idx_messages_session_id, state_meta) are its own.
	ours, err := s.objectsOurs(ctx)
	if err != nil {
		return nil, err
	}
	var held []sessiondb.Addition
	for _, a := range additions {
		if a.Kind == metaKey && keys[a.Name] || a.Kind != metaKey && ours && objects[a.Name] == a.Kind {
			held = append(held, a)
		}
	}
	return held, nil
}

// objectsOurs reports whether the listed objects the file holds are
// sessiondb's: the file is of schema 6 or older, where Hermes makes none
// of them.
func (s *Store) objectsOurs(ctx context.Context) (bool, error) {
	v, err := s.SchemaVersion(ctx)
	return v <= SchemaVersion6, err
}

// RemoveAdditions takes out of the file every addition it holds
// (Additions), in one transaction: triggers first (a trigger left without
// its table would fail every write to messages), then views, tables
// (FTS5 drops its own storage with its table) and indexes; of state_meta,
// only sessiondb's keys, and the table itself only where sessiondb made it
// (a file of schema 6 or older) and nothing else is left in it. It returns
// what it removed. A store that keeps writing the file adds them again:
// open it with NoAdditions after.
func (s *Store) RemoveAdditions(ctx context.Context) ([]sessiondb.Addition, error) {
	if s.w == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "remove sessiondb's additions from %s: the store is open read-only", s.path)
	}
	held, err := s.Additions(ctx)
	if err != nil {
		return nil, err
	}
	order := map[string]int{"trigger": 0, "view": 1, "table": 2, "index": 3, metaKey: 4}
	drop := slices.Clone(held)
	slices.SortStableFunc(drop, func(a, b sessiondb.Addition) int { return order[a.Kind] - order[b.Kind] })
	err = s.changeSchema(ctx, func(tx *sqlitedb.Tx) error {
		for _, a := range drop {
			switch {
			case a.Kind == metaKey:
				if _, err := tx.Exec("DELETE FROM state_meta WHERE key = ?", a.Name); err != nil {
					return err
				}
			case a.Name == "state_meta", strings.HasPrefix(a.Name, "sqlite_autoindex_"):
				// state_meta last, below; an automatic index goes with
				// its table.
			default:
				var exists bool
				if err := tx.QueryRow("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?)", a.Kind, a.Name).Scan(&exists); err != nil {
					return err
				}
				// A shadow table went with its FTS5 table.
				if exists {
					if _, err := tx.Exec("DROP " + strings.ToUpper(a.Kind) + " " + quoteIdent(a.Name)); err != nil {
						return err
					}
				}
			}
		}
		if slices.ContainsFunc(drop, func(a sessiondb.Addition) bool { return a.Name == "state_meta" }) {
			var left int
			if err := tx.QueryRow("SELECT count(*) FROM state_meta").Scan(&left); err != nil {
				return err
			}
			if left == 0 {
				if _, err := tx.Exec("DROP TABLE state_meta"); err != nil {
					return err
				}
			}
		}
		return nil
	}, "remove sessiondb's additions from %s")
	if err != nil {
		return nil, err
	}
	return held, nil
}
