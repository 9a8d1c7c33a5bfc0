package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// ForkSession creates session n as a child of src holding copies of src's
// live messages up to atMessageID (all fields, timestamps kept), in one
// transaction (IMP-11). Like Hermes' /branch, which re-appends the
// conversation it would resume, it copies the active rows only: rows a
// rewind hid or a compaction summarised away stay behind, and the copies
// are live rows (active 1, compacted 0); message_count counts them. Its
// model_config is src's plus n.ModelConfig plus "_branched_from": src;
// source, model, system prompt and user default to src's. The cut never
// separates a tool call from its results. An unknown src is not_found; an
// existing n.ID conflict.
func (s *Store) ForkSession(ctx context.Context, src string, atMessageID int64, n sessiondb.NewSession) (string, error) {
	if err := n.ValidateFork(src); err != nil {
		return "", inputErr(err, "fork session", src)
	}
	now := s.epochNow()
	copyCols := make([]string, 0, len(s.si.msgOrder))
	for _, c := range s.si.msgOrder {
		if c != "id" && c != "session_id" && c != "active" && c != "compacted" {
			copyCols = append(copyCols, c)
		}
	}
	colList := strings.Join(copyCols, ", ")
	into, from := colList, colList
	live := "" // the rows Hermes resumes: active ones (NULL is active, as Hermes heals it)
	if s.si.msgCols["active"] {
		into, from = colList+", active", colList+", 1"
		live = " AND COALESCE(m.active, 1) = 1"
	}
	if s.si.msgCols["compacted"] {
		into, from = into+", compacted", from+", 0"
	}
	err := s.write(ctx, "fork session "+src, func(tx *sqlitedb.Tx) error {
		var source string
		var model, prompt, user, mc sql.NullString
		err := tx.QueryRow("SELECT source, model, system_prompt, user_id, model_config FROM sessions WHERE id = ?", src).Scan(&source, &model, &prompt, &user, &mc)
		if err == sql.ErrNoRows {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "fork: session %q not found", src)
		}
		if err != nil {
			return err
		}
		var one int
		if err := tx.QueryRow("SELECT 1 FROM sessions WHERE id = ?", n.ID).Scan(&one); err == nil {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "fork: session %q already exists", n.ID)
		} else if err != sql.ErrNoRows {
			return err
		}
		cfgJSON, err := sessiondb.ForkModelConfig(src, mc.String, mc.Valid, n.ModelConfig)
		if err != nil {
			return err
		}
		pick := func(own string, inherited sql.NullString) any {
			if own != "" {
				return own
			}
			if inherited.Valid {
				return inherited.String
			}
			return nil
		}
		if n.Source != "" {
			source = n.Source
		}
		if _, err := tx.Exec(`INSERT INTO sessions (id, source, user_id, model, model_config, system_prompt, parent_session_id, started_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, n.ID, source, pick(n.UserID, user), pick(n.Model, model), cfgJSON, pick(n.SystemPrompt, prompt), src, now); err != nil {
			return err
		}
		all, err := sqlitedb.Append(tx.Context(), tx, "SELECT m.id, m.role, m.tool_call_id, m.tool_calls FROM messages m WHERE m.session_id = ?"+live+" ORDER BY m.id", []any{src}, nil, func(row sqlitedb.Row) (sessiondb.ForkRow, error) {
			var r sessiondb.ForkRow
			var role, toolCall, toolCalls sql.NullString
			err := row.Scan(&r.ID, &role, &toolCall, &toolCalls)
			r.Role, r.ToolCallID, r.ToolCalls, r.HasToolCalls = role.String, toolCall.String, toolCalls.String, toolCalls.Valid
			return r, err
		})
		if err != nil {
			return err
		}
		cut := sessiondb.ForkCut(all, atMessageID)
		if cut < 0 {
			return nil
		}
		tools := sessiondb.ForkToolCalls(all[:cut+1])
		if _, err := tx.Exec("INSERT INTO messages (session_id, "+into+") SELECT ?, "+from+
			" FROM messages m WHERE m.session_id = ? AND m.id <= ?"+live+" ORDER BY m.id", n.ID, src, all[cut].ID); err != nil {
			return err
		}
		_, err = tx.Exec("UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?", cut+1, tools, n.ID)
		return err
	})
	if err != nil {
		return "", err
	}
	return n.ID, nil
}
