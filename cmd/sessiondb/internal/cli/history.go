package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
)

// Access says what a command needs from the history store file.
type Access int

const (
	// ReadStore: the file must exist; it is always opened read-only, so
	// reading writes nothing (no schema into an empty file, no migration,
	// no -wal/-shm files of another user), but for the recent search index
	// of a large store, which a search brings up to date where this
	// process may write the file, unless --read-only was given
	// (sqlite.Options.KeepSearchIndex).
	ReadStore Access = iota
	// WriteStore: the file must exist; refused under --read-only.
	WriteStore
	// CreateStore: the file is created when missing; refused under
	// --read-only.
	CreateStore
	// ServeStore: the file must exist; opened read-only under --read-only,
	// writable otherwise: for a long-running command that reads and, unless
	// told not to, writes (serve).
	ServeStore
)

// OpenHistory opens the history store (HistoryPath) for one command with
// the given access and durability (NORMAL, FULL, or "" for the default).
// A command that does not create the store never creates a file: a missing
// store is not_found with a hint on making one.
func (f *Factory) OpenHistory(ctx context.Context, what Access, synchronous string) (sessiondb.Store, error) {
	path, err := f.HistoryPath()
	if err != nil {
		return nil, err
	}
	return f.OpenHistoryAt(ctx, path, what, synchronous)
}

// OpenHistoryAt opens the history store at path (a file or a postgres://
// URL) as OpenHistory opens the default one: for commands that work on
// two stores (copy).
func (f *Factory) OpenHistoryAt(ctx context.Context, path string, what Access, synchronous string) (sessiondb.Store, error) {
	if what != ReadStore && what != ServeStore && f.ReadOnly {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "this command changes the store, and --read-only was given: drop --read-only to run it")
	}
	if what != CreateStore && !store.IsURL(path) {
		// A missing file, or an empty one, holds no store: a command that
		// does not create one writes nothing into it.
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			what := "no history store at %s"
			if err == nil {
				what = "no history store at %s (the file is empty)"
			}
			return nil, sessiondb.Errorf(sessiondb.ENOTFOUND,
				what+": create one with `sessiondb import examples/conversations.jsonl` or `sessiondb quickstart`, or point --db at an existing state.db", path)
		}
	}
	st, err := store.Open(ctx, path, store.Options{
		// A file is always read read-only: see ReadStore.
		ReadOnly:        what == ReadStore && (f.ReadOnly || !store.IsURL(path)) || what == ServeStore && f.ReadOnly,
		KeepSearchIndex: what == ReadStore && !f.ReadOnly,
		NoAdditions:     f.NoAdditions,
		MustExist:       what != CreateStore,
		Synchronous:     synchronous,
		Now:             f.Now,
		Logger:          f.WarnLogger(),
	})
	if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND && store.IsURL(path) {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "%w: create one with `sessiondb import FILE --db URL`", err)
	}
	return st, err
}

// WithHistory opens the store as OpenHistory does, runs fn and closes the
// store, reporting a failure to close (an unflushed checkpoint is worth
// knowing about) only when fn itself succeeded.
func (f *Factory) WithHistory(ctx context.Context, what Access, synchronous string, fn func(sessiondb.Store) error) error {
	return With(func() (sessiondb.Store, error) { return f.OpenHistory(ctx, what, synchronous) }, "close history store", fn)
}
