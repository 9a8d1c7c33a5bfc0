package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

func continuationKey(provider string) string { return "continuation:" + strings.ToLower(provider) }

func checkKey(key string) error {
	if key == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "state key is empty")
	}
	return checkText("state key", key)
}

// StateGet returns a session_state value; found is false when absent.
func (a *Agent) StateGet(ctx context.Context, key string) (value string, found bool, err error) {
	if err := checkKey(key); err != nil {
		return "", false, err
	}
	err = a.out.QueryRowContext(ctx, "SELECT value FROM session_state WHERE key = ?", key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, sqlitedb.Wrap(err, "agent: read state %q", key)
	}
	return value, true, nil
}

// StateSet upserts a session_state value.
func (a *Agent) StateSet(ctx context.Context, key, value string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkText("state value", value); err != nil {
		return err
	}
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec(`INSERT INTO session_state (key, value, updated_at) VALUES (?, ?, ?)
 ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, key, value, FormatTime(a.now()))
		return err
	})
	return sqlitedb.Wrap(err, "agent: write state %q", key)
}

// StateDelete deletes a session_state key (absent is not an error).
func (a *Agent) StateDelete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("DELETE FROM session_state WHERE key = ?", key)
		return err
	})
	return sqlitedb.Wrap(err, "agent: delete state %q", key)
}

// StateList returns every session_state key and value.
func (a *Agent) StateList(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := each(a.outQ(ctx), "SELECT key, value FROM session_state", nil, func(row sqlitedb.Row) error {
		var k, v string
		if err := row.Scan(&k, &v); err != nil {
			return err
		}
		out[k] = v
		return nil
	})
	if err != nil {
		return nil, sqlitedb.Wrap(err, "agent: list state")
	}
	return out, nil
}

func checkProvider(p string) error {
	if p == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "provider is empty")
	}
	return checkText("provider", p)
}

// Continuation returns the provider's resume id (key
// continuation:<provider lowercased>), "" when none.
func (a *Agent) Continuation(ctx context.Context, provider string) (string, error) {
	if err := checkProvider(provider); err != nil {
		return "", err
	}
	v, _, err := a.StateGet(ctx, continuationKey(provider))
	return v, err
}

// SetContinuation stores the provider's resume id.
func (a *Agent) SetContinuation(ctx context.Context, provider, id string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	return a.StateSet(ctx, continuationKey(provider), id)
}

// ClearContinuation deletes the provider's resume id (on /clear or an
// "invalid session" from the provider).
func (a *Agent) ClearContinuation(ctx context.Context, provider string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	return a.StateDelete(ctx, continuationKey(provider))
}
