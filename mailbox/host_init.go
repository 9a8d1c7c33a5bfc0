package mailbox

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// InitSession creates the session folder, inbox/ and outbox/, and both
// files with the contract's DDL in journal_mode=DELETE. It is idempotent: an
// existing session keeps its rows; an existing inbound.db gets the host's
// lazy migrations, an existing outbound.db is left to its agent.
//
// A new file is built under a temporary name and linked into place only
// once its tables exist, outbound.db before inbound.db: a host daemon
// sweeping the data root takes a folder with an inbound.db for a session,
// and must never find one half made (no outbound.db yet, or a file
// without its tables).
func (h *Host) InitSession(ctx context.Context, ref SessionRef) error {
	dir, err := h.layout.SessionDir(ref)
	if err != nil {
		return err
	}
	unlock, err := h.lockSession(ctx, ref)
	if err != nil {
		return err
	}
	defer unlock()
	for _, d := range []string{filepath.Dir(dir), dir, filepath.Join(dir, OutboxDirName), filepath.Join(dir, InboxDirName)} {
		if err := h.mkdir(d); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name, ddl string
		migrate   func(*sqlitedb.Tx) error
	}{{OutboundFile, OutboundSchema, migrateOutbound}, {InboundFile, InboundSchema, migrateInbound}} {
		path := filepath.Join(dir, f.name)
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := h.buildFile(ctx, path, f.ddl, f.migrate); err != nil {
				return err
			}
			continue
		case err != nil:
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "stat %s", path)
		case !fi.Mode().IsRegular():
			return sessiondb.Errorf(sessiondb.EINVALID, "%s is not a regular file", path)
		}
		if _, warn, err := sqlitedb.CreateFile(path, h.modes.dir, h.modes.file); err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", path)
		} else if warn != nil {
			h.log.Warn("mailbox: could not tighten file mode", "path", path, "err", warn)
		}
		h.chgrp(path)
		// An existing outbound.db belongs to the agent: the host never
		// opens it read-write while a container may be alive, and the
		// agent runs its own lazy migrations. Only an empty file (a
		// creation interrupted before the DDL) is finished here.
		if f.name == OutboundFile && fi.Size() > 0 {
			continue
		}
		if err := h.initFile(ctx, path, f.ddl, f.migrate); err != nil {
			return err
		}
	}
	s := h.session(ref)
	h.mu.Lock()
	s.migrated = true
	h.mu.Unlock()
	return nil
}

// buildFile makes path a new database with ddl: built as a temporary file
// beside it, then linked into place, so no reader ever sees it without its
// tables. When another process made path meanwhile, that one is kept (and
// migrated).
func (h *Host) buildFile(ctx context.Context, path, ddl string, migrate func(*sqlitedb.Tx) error) error {
	tmp := path + ".init-" + NewID("tmp", h.now())
	defer os.Remove(tmp)
	if _, _, err := sqlitedb.CreateFile(tmp, h.modes.dir, h.modes.file); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", tmp)
	}
	h.chgrp(tmp)
	if err := h.initFile(ctx, tmp, ddl, migrate); err != nil {
		return err
	}
	// A link, unlike a rename, never replaces a file that appeared since.
	switch err := os.Link(tmp, path); {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return h.initFile(ctx, path, ddl, migrate)
	default:
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", path)
	}
}

// initFile runs migrate and ddl on the database at path in one transaction.
func (h *Host) initFile(ctx context.Context, path, ddl string, migrate func(*sqlitedb.Tx) error) error {
	rw, err := openRW(ctx, path, pragmasRW, h.opts.WriteBudget)
	if err != nil {
		return err
	}
	err = rw.do(ctx, func(tx *sqlitedb.Tx) error {
		if err := migrate(tx); err != nil {
			return err
		}
		return tx.ExecScript(ddl)
	})
	if cerr := rw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return sqlitedb.Wrap(err, "initialize %s", path)
	}
	return nil
}

func (h *Host) mkdir(d string) error {
	fi, err := os.Lstat(d)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return sessiondb.Errorf(sessiondb.EINVALID, "%s exists and is not a folder", d)
	case !errors.Is(err, fs.ErrNotExist):
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "stat %s", d)
	}
	if err := os.MkdirAll(d, h.modes.dir); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", d)
	}
	// MkdirAll's mode passes through the umask; say exactly what we mean.
	if err := os.Chmod(d, h.modes.dir); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "chmod %s", d)
	}
	h.chgrp(d)
	return nil
}

func (h *Host) chgrp(path string) {
	if h.modes.gid > 0 {
		if err := os.Lchown(path, -1, h.modes.gid); err != nil {
			h.log.Warn("mailbox: could not set the shared group", "path", path, "err", err)
		}
	}
}
