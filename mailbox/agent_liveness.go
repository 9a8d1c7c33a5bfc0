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

// TouchHeartbeat sets .heartbeat's mtime to the agent clock's now, creating
// the file (0600) if missing. It is not a database write. Anything but a
// regular file in its place (a planted link) is refused, never followed.
func (a *Agent) TouchHeartbeat() error {
	p := filepath.Join(a.dir, HeartbeatFile)
	now := a.now()
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s is not a regular file (%s): refused", p, fi.Mode().Type())
	}
	if err := os.Chtimes(p, now, now); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "touch %s", p)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", p)
	}
	if f != nil {
		f.Close()
	}
	if err := os.Chtimes(p, now, now); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "touch %s", p)
	}
	return nil
}

// SetToolInFlight records the tool now running and its declared timeout
// (0 = none), so the host's stuck check allows a long Bash call.
func (a *Agent) SetToolInFlight(ctx context.Context, tool string, declaredTimeoutMS int64) error {
	if tool == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "tool name is empty")
	}
	if err := checkText("tool", tool); err != nil {
		return err
	}
	if declaredTimeoutMS < 0 {
		return sessiondb.Errorf(sessiondb.EINVALID, "declared timeout %d ms is negative", declaredTimeoutMS)
	}
	now := FormatTime(a.now())
	var ms any
	if declaredTimeoutMS > 0 {
		ms = declaredTimeoutMS
	}
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec(`INSERT INTO container_state (id, current_tool, tool_declared_timeout_ms, tool_started_at, updated_at)
 VALUES (1, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET current_tool = excluded.current_tool,
 tool_declared_timeout_ms = excluded.tool_declared_timeout_ms, tool_started_at = excluded.tool_started_at, updated_at = excluded.updated_at`,
			tool, ms, now, now)
		return err
	})
	return sqlitedb.Wrap(err, "agent: set tool in flight")
}

// ClearToolInFlight records that no tool is running.
func (a *Agent) ClearToolInFlight(ctx context.Context) error {
	now := FormatTime(a.now())
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec(`INSERT INTO container_state (id, current_tool, tool_declared_timeout_ms, tool_started_at, updated_at)
 VALUES (1, NULL, NULL, NULL, ?) ON CONFLICT(id) DO UPDATE SET current_tool = NULL,
 tool_declared_timeout_ms = NULL, tool_started_at = NULL, updated_at = excluded.updated_at`, now)
		return err
	})
	return sqlitedb.Wrap(err, "agent: clear tool in flight")
}

// ContainerState reads this session's container_state row.
func (a *Agent) ContainerState(ctx context.Context) (ContainerState, error) {
	st, err := readContainerState(a.outQ(ctx))
	return st, sqlitedb.Wrap(err, "agent: read container state")
}
