package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// ForkSession creates session n as a child of src holding copies of src's
// live messages up to atMessageID (all fields, timestamps kept), in one
// transaction (IMP-11), as the sqlite backend's: the active rows only,
// copied as live rows; the cut never separates a tool call from its
// results (sessiondb.ForkCut). An unknown src is not_found; an existing
// n.ID conflict.
func (s *Store) ForkSession(ctx context.Context, src string, atMessageID int64, n sessiondb.NewSession) (string, error) {
	if err := n.ValidateFork(src); err != nil {
		return "", sessiondb.Wrap("", err, "fork session %s", src)
	}
	now := s.epochNow()
	err := s.write(ctx, "fork session "+src, func(tx pgx.Tx) error {
		var source string
		var model, prompt, user, mc *string
		err := tx.QueryRow(ctx, "SELECT source, model, system_prompt, user_id, model_config FROM sessions WHERE id = $1 FOR KEY SHARE", src).Scan(&source, &model, &prompt, &user, &mc)
		if noRows(err) {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "fork: session %q not found", src)
		}
		if err != nil {
			return err
		}
		var stored string
		if mc != nil {
			stored = *mc
		}
		cfg, err := sessiondb.ForkModelConfig(src, stored, mc != nil, n.ModelConfig)
		if err != nil {
			return err
		}
		pick := func(own string, inherited *string) *string {
			if own != "" {
				return &own
			}
			return inherited
		}
		if n.Source != "" {
			source = n.Source
		}
		tag, err := tx.Exec(ctx, `INSERT INTO sessions (id, source, user_id, model, model_config, system_prompt, parent_session_id, started_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`, n.ID, source, pick(n.UserID, user), pick(n.Model, model), cfg, pick(n.SystemPrompt, prompt), src, now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "fork: session %q already exists", n.ID)
		}
		var all []sessiondb.ForkRow
		err = each(ctx, tx, "SELECT id, role, tool_call_id, tool_calls FROM messages WHERE session_id = $1 AND active = 1 ORDER BY id", []any{src}, func(r pgx.Rows) error {
			var row sessiondb.ForkRow
			var tcid, tcs *string
			if err := r.Scan(&row.ID, &row.Role, &tcid, &tcs); err != nil {
				return err
			}
			if tcid != nil {
				row.ToolCallID = *tcid
			}
			if tcs != nil {
				row.ToolCalls, row.HasToolCalls = *tcs, true
			}
			all = append(all, row)
			return nil
		})
		if err != nil {
			return err
		}
		cut := sessiondb.ForkCut(all, atMessageID)
		if cut < 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO messages (session_id, `+forkColumns+`)
SELECT $1, `+forkColumns+`
FROM messages WHERE session_id = $2 AND id <= $3 AND active = 1 ORDER BY id`, n.ID, src, all[cut].ID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE sessions SET message_count = $1, tool_call_count = $2 WHERE id = $3", cut+1, sessiondb.ForkToolCalls(all[:cut+1]), n.ID)
		return err
	})
	if err != nil {
		return "", err
	}
	return n.ID, nil
}

// forkColumns are the message columns a fork copies: every one but the
// id, the session and the marks (a copy is live: the defaults).
const forkColumns = `role, content, content_bytes, tool_call_id, tool_calls, tool_name, effect_disposition, "timestamp",
    token_count, finish_reason, reasoning, reasoning_content, reasoning_details, codex_reasoning_items, codex_message_items,
    platform_message_id, observed`
