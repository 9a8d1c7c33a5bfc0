package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// The control plane's files under $SESSIONDB_HOME, named as NanoClaw
// names them under its data/ folder, so SESSIONDB_HOME=<nanoclaw>/data
// adopts an existing install.
const (
	CentralFile = "v2.db"
	SessionsDir = "v2-sessions"
)

// HomePath is name inside the sessiondb home: $SESSIONDB_HOME, else
// ~/.sessiondb.
func HomePath(name string) (string, error) {
	if h := os.Getenv("SESSIONDB_HOME"); h != "" {
		return filepath.Join(h, name), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "cannot find your home folder (%v): set SESSIONDB_HOME or name the file with a flag", err)
	}
	return filepath.Join(home, ".sessiondb", name), nil
}

// CentralPath is the central registry: flag (--central) when set, else
// $SESSIONDB_HOME/v2.db, else ~/.sessiondb/v2.db.
func CentralPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return HomePath(CentralFile)
}

// DataPath is the root of the session mailboxes: flag (--data) when set,
// else $SESSIONDB_HOME/v2-sessions, else ~/.sessiondb/v2-sessions.
func DataPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return HomePath(SessionsDir)
}

// WarnLogger is the logger of a store a command opens: its warnings, as
// text on the command's stderr.
func (f *Factory) WarnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(f.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// OpenRegistry opens the central registry at path with the given access
// (see Access; --read-only applies as for the history store). A command
// that does not create the registry never creates a file: a missing one is
// not_found with a hint on making one.
func (f *Factory) OpenRegistry(ctx context.Context, path string, what Access) (sessiondb.Registry, error) {
	if what != ReadStore && f.ReadOnly {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "this command changes the registry, and --read-only was given: drop --read-only to run it")
	}
	reg, err := store.OpenRegistry(ctx, path, store.Options{
		ReadOnly:  what == ReadStore && f.ReadOnly,
		MustExist: what != CreateStore,
		Now:       f.Now,
		Logger:    f.WarnLogger(),
	})
	if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND && what != CreateStore {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "no central registry at %s: create it with `sessiondb admin groups create NAME`, or point --central at a NanoClaw data/v2.db", errtext.RedactPassword(path))
	}
	return reg, err
}

// WithRegistry opens the registry as OpenRegistry does, runs fn and closes
// it, reporting a failure to close only when fn succeeded.
func (f *Factory) WithRegistry(ctx context.Context, path string, what Access, fn func(sessiondb.Registry) error) error {
	return With(func() (sessiondb.Registry, error) { return f.OpenRegistry(ctx, path, what) }, "close central registry", fn)
}
