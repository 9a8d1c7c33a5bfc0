package cli

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
)

// Access says what a command needs from the history store file.
type Access int

const (
	// ReadStore: the file must exist; opened read-only under --read-only.
	ReadStore Access = iota
	// WriteStore: the file must exist; refused under --read-only.
	WriteStore
	// CreateStore: the file is created when missing; refused under
	// --read-only.
	CreateStore
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
	if what != ReadStore && f.ReadOnly {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "this command changes the store, and --read-only was given: drop --read-only to run it")
	}
	if what != CreateStore && !store.IsURL(path) {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, sessiondb.Errorf(sessiondb.ENOTFOUND,
				"no history store at %s: create one with `sessiondb import examples/conversations.jsonl` or `sessiondb quickstart`, or point --db at an existing state.db", path)
		}
	}
	st, err := store.Open(ctx, path, store.Options{
		ReadOnly:    what == ReadStore && f.ReadOnly,
		MustExist:   what != CreateStore,
		Synchronous: synchronous,
		Now:         f.Now,
		Logger:      slog.New(slog.NewTextHandler(f.Err, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND && store.IsURL(path) {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "%w: create one with `sessiondb import FILE --db URL`", err)
	}
	return st, err
}

// WithHistory opens the store as OpenHistory does, runs fn and closes the
// store, reporting a failure to close (an unflushed checkpoint is worth
// knowing about) only when fn itself succeeded.
func (f *Factory) WithHistory(ctx context.Context, what Access, synchronous string, fn func(sessiondb.Store) error) (err error) {
	st, err := f.OpenHistory(ctx, what, synchronous)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = sessiondb.Wrap("", cerr, "close history store")
		}
	}()
	return fn(st)
}
