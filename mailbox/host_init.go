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
	for _, f := range []struct{ name, ddl string }{{InboundFile, InboundSchema}, {OutboundFile, OutboundSchema}} {
		path := filepath.Join(dir, f.name)
		if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
			return sessiondb.Errorf(sessiondb.EINVALID, "%s is not a regular file", path)
		}
		created, warn, err := sqlitedb.CreateFile(path, h.modes.dir, h.modes.file)
		if err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", path)
		} else if warn != nil {
			h.log.Warn("mailbox: could not tighten file mode", "path", path, "err", warn)
		}
		h.chgrp(path)
		if f.name == OutboundFile && !created {
			// An existing outbound.db belongs to the agent: the host never
			// opens it read-write while a container may be alive, and the
			// agent runs its own lazy migrations. Only an empty file (a
			// creation interrupted before the DDL) is finished here.
			if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
				continue
			}
		}
		rw, err := openRW(ctx, path, pragmasRW, h.opts.WriteBudget)
		if err != nil {
			return err
		}
		err = rw.do(ctx, func(tx *sqlitedb.Tx) error {
			if f.name == InboundFile {
				if err := migrateInbound(tx); err != nil {
					return err
				}
			} else if err := migrateOutbound(tx); err != nil {
				return err
			}
			return tx.ExecScript(f.ddl)
		})
		if cerr := rw.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return sqlitedb.Wrap(err, "initialize %s", path)
		}
	}
	s := h.session(ref)
	h.mu.Lock()
	s.migrated = true
	h.mu.Unlock()
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
