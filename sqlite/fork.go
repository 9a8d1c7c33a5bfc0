package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// forkRow is what the cut decision needs of a message.
type forkRow struct {
	id        int64
	role      string
	toolCall  sql.NullString // tool_call_id
	toolCalls sql.NullString
}

// forkCut returns the index of the last row to copy (-1: none) when the
// caller asked for rows with id <= at. A cut inside a tool-call group (an
// assistant row with tool_calls and the tool rows right after it) moves to
// the group's end when every call has its answer, else to just before the
// assistant row, so the copy never holds a call without its result.
func forkCut(rows []forkRow, at int64) int {
	k := -1
	for i, r := range rows {
		if r.id <= at {
			k = i
		}
	}
	if k < 0 {
		return -1
	}
	a := k
	for a >= 0 && rows[a].role == "tool" {
		a--
	}
	if a < 0 || rows[a].role != "assistant" || storedToolCallCount(rows[a].toolCalls) == 0 {
		return k
	}
	g := a
	for g+1 < len(rows) && rows[g+1].role == "tool" {
		g++
	}
	if groupComplete(rows[a], rows[a+1:g+1]) {
		return g
	}
	return a - 1
}

// groupComplete reports whether the tool rows answer every call of the
// assistant row: by tool_call_id when the calls carry ids, else by count.
func groupComplete(call forkRow, answers []forkRow) bool {
	var calls []struct {
		ID string `json:"id"`
	}
	want := storedToolCallCount(call.toolCalls)
	if json.Unmarshal([]byte(call.toolCalls.String), &calls) == nil && len(calls) > 0 {
		got := map[string]bool{}
		for _, r := range answers {
			got[r.toolCall.String] = true
		}
		ids := 0
		for _, c := range calls {
			if c.ID == "" {
				continue
			}
			ids++
			if !got[c.ID] {
				return false
			}
		}
		if ids == len(calls) {
			return true
		}
	}
	return int64(len(answers)) >= want
}

// ForkSession creates session n as a child of src holding copies of src's
// messages up to atMessageID (all fields, timestamps kept), in one
// transaction (IMP-11). Its model_config is src's plus n.ModelConfig plus
// "_branched_from": src; source, model, system prompt and user default to
// src's. The cut never separates a tool call from its results. An unknown
// src is not_found; an existing n.ID conflict.
func (s *Store) ForkSession(ctx context.Context, src string, atMessageID int64, n sessiondb.NewSession) (string, error) {
	if err := n.ValidateFork(src); err != nil {
		return "", inputErr(err, "fork session", src)
	}
	now := s.epochNow()
	copyCols := make([]string, 0, len(s.si.msgOrder))
	for _, c := range s.si.msgOrder {
		if c != "id" && c != "session_id" {
			copyCols = append(copyCols, c)
		}
	}
	colList := strings.Join(copyCols, ", ")
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
		cfg := map[string]any{}
		if mc.Valid {
			_ = json.Unmarshal([]byte(mc.String), &cfg) // a non-object config is replaced
			if cfg == nil {
				cfg = map[string]any{}
			}
		}
		for k, v := range n.ModelConfig {
			cfg[k] = v
		}
		cfg["_branched_from"] = src
		cfgJSON, err := json.Marshal(cfg)
		if err != nil {
			return sessiondb.Errorf(sessiondb.EINVALID, "fork: model_config: %v", err)
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
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, n.ID, source, pick(n.UserID, user), pick(n.Model, model), string(cfgJSON), pick(n.SystemPrompt, prompt), src, now); err != nil {
			return err
		}
		all, err := sqlitedb.Append(tx.Context(), tx, "SELECT m.id, m.role, m.tool_call_id, m.tool_calls FROM messages m WHERE m.session_id = ?"+s.q.visible+" ORDER BY m.id", []any{src}, nil, func(row sqlitedb.Row) (forkRow, error) {
			var r forkRow
			var role sql.NullString
			err := row.Scan(&r.id, &role, &r.toolCall, &r.toolCalls)
			r.role = role.String
			return r, err
		})
		if err != nil {
			return err
		}
		cut := forkCut(all, atMessageID)
		if cut < 0 {
			return nil
		}
		var tools int64
		for _, r := range all[:cut+1] {
			tools += storedToolCallCount(r.toolCalls)
		}
		if _, err := tx.Exec("INSERT INTO messages (session_id, "+colList+") SELECT ?, "+colList+
			" FROM messages m WHERE m.session_id = ? AND m.id <= ?"+s.q.visible+" ORDER BY m.id", n.ID, src, all[cut].id); err != nil {
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
