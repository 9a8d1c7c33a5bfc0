package sessiondb

import "context"

// SQLiteMaintainer is the upkeep of a store kept in one SQLite file (the
// sqlite backend): what `sessiondb doctor` and the benchmark inspect and
// repair. It is not part of Store, so a backend without such a file
// (PostgreSQL) has nothing to fake; faces ask for it with a type assertion
// and skip what the store does not offer.
type SQLiteMaintainer interface {
	// Path returns the database file the store was opened on.
	Path() string
	// SQLiteVersion returns the version of the linked SQLite library.
	SQLiteVersion(ctx context.Context) (string, error)
	// SchemaVersion returns the file's schema_version row (0 when none).
	SchemaVersion(ctx context.Context) (int, error)
	// IntegrityCheck runs PRAGMA integrity_check and returns its rows: a
	// single "ok" when the file is sound.
	IntegrityCheck(ctx context.Context) ([]string, error)
	// ExplainIntegrity sorts IntegrityCheck's lines into damage and
	// version skew: complaints that only differences between SQLite
	// versions cause (a trigram index written by an SQLite that read text
	// differently), each with an explanation naming the versions.
	ExplainIntegrity(ctx context.Context, lines []string) (damage, skew []string, err error)
	// FTSIntegrityCheck verifies the full-text index against the messages;
	// a mismatch is internal, a file without the index invalid.
	FTSIntegrityCheck(ctx context.Context) error
	// CanCheckFTS reports whether FTSIntegrityCheck can run here: nil (also
	// for a file without the index, which the check reports), or the
	// invalid error saying why not (FTS5 runs its check as a write, which
	// a read-only folder or another user's store does not allow).
	CanCheckFTS() error
	// RebuildFTS rebuilds the full-text index from the messages, on a file
	// of any schema version: a newer Hermes' full-text tables as Hermes
	// rebuilds them, each kept as it is defined. It refuses (invalid) a
	// file without the index, or one whose index it cannot rebuild alike
	// for every SQLite that may write it, saying why.
	RebuildFTS(ctx context.Context) error
	// OptimizeFTS merges the full-text tables' segments; it refuses as
	// RebuildFTS does.
	OptimizeFTS(ctx context.Context) error
	// CanRebuildFTS reports whether RebuildFTS and OptimizeFTS would run:
	// nil, or the invalid error they would return, whose message says what
	// works instead (a face advises only what will work).
	CanRebuildFTS() error
	// Additions lists what sessiondb has added to this file that Hermes
	// did not make (tables, views, indexes, triggers, state_meta keys), as
	// the file holds them now; nil on a file without any.
	Additions(ctx context.Context) ([]Addition, error)
	// RemoveAdditions takes them out, leaving the schema as Hermes made
	// it, and returns what it removed.
	RemoveAdditions(ctx context.Context) ([]Addition, error)
	// BackfillTrigram indexes the rows that predate the trigram index until
	// done or ctx ends, and reports whether the index is complete (false,
	// nil without a trigram index).
	BackfillTrigram(ctx context.Context) (bool, error)
	// RecentIndexBehind reports how many messages the recent search index
	// (the second full-text index of the newest messages that a store
	// beyond its search window keeps) must take in or let go before a
	// search can use it: 0 when it is current, or when the store keeps
	// none (within the window, read-only without KeepSearchIndex, or a
	// file it may not add one to). A search catches it up itself; a face can call SyncRecentIndex
	// first to show progress when much is owed.
	RecentIndexBehind(ctx context.Context) (int64, error)
	// SyncRecentIndex brings the recent search index up to date, as a
	// search would, in short write transactions; nothing when
	// RecentIndexBehind is 0.
	SyncRecentIndex(ctx context.Context) error
	// IncrementalVacuum returns up to pages free pages to the file system
	// in short write transactions and reports how many it freed; nothing
	// on a file without incremental auto-vacuum.
	IncrementalVacuum(ctx context.Context, pages int64) (int64, error)
	// VacuumInto writes a compacted copy of the store to path (absent or
	// empty, else conflict), 0600 in a 0700 folder, reading one snapshot.
	VacuumInto(ctx context.Context, path string) error
}

// Addition is one thing sessiondb adds to a Hermes state.db: an object in
// sqlite_master (Kind table, view, index or trigger) or a key of Hermes'
// state_meta table (Kind "state_meta key").
type Addition struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// For says what the addition serves.
	For string `json:"for"`
}
