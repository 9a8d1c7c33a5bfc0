package sqlite

import (
	"context"
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
