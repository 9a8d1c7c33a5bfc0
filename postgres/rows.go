package postgres

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// querier is what reads run on: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// each runs sql on q and calls fn for every row; the one place rows are
// stepped and closed.
func each(ctx context.Context, q querier, sql string, args []any, fn func(r pgx.Rows) error) error {
	rows, err := q.Query(ctx, sql, args...)
	return eachOf(rows, err, fn)
}

// eachOf calls fn for every row of rows, the result of a query that failed
// with err when err is set, and closes them.
func eachOf(rows pgx.Rows, err error, fn func(r pgx.Rows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// appendRows appends what scan reads of every row of sql on q to out:
// each for the common case of reading a list.
func appendRows[T any](ctx context.Context, q querier, sql string, args []any, out []T, scan func(pgx.Row) (*T, error)) ([]T, error) {
	err := each(ctx, q, sql, args, func(r pgx.Rows) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, *v)
		return nil
	})
	return out, err
}

// strings returns the first column of every row, NULL as "".
func queryStrings(ctx context.Context, q querier, sql string, args ...any) ([]string, error) {
	var out []string
	err := each(ctx, q, sql, args, func(r pgx.Rows) error {
		var v *string
		if err := r.Scan(&v); err != nil {
			return err
		}
		if v != nil {
			out = append(out, *v)
		} else {
			out = append(out, "")
		}
		return nil
	})
	return out, err
}

// noRows reports a QueryRow that found nothing.
func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// sessionColumns are the v6 session columns and those a newer Hermes
// added (migration 002), in the order scanSession reads them.
const sessionColumns = `id, source, user_id, model, model_config, system_prompt, parent_session_id, started_at, ended_at, end_reason,
    message_count, tool_call_count, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
    billing_provider, billing_base_url, billing_mode, estimated_cost_usd, actual_cost_usd, cost_status, cost_source, pricing_version, title,
    api_call_count, cwd, git_branch, git_repo_root, archived, rewind_count,
    session_key, chat_id, chat_type, thread_id, display_name, origin_json, expiry_finalized,
    handoff_state, handoff_platform, handoff_error,
    compression_failure_cooldown_until, compression_failure_error, compression_fallback_streak`

// sessionColumnsOf is sessionColumns with every column qualified by alias.
func sessionColumnsOf(alias string) string {
	parts := strings.Split(sessionColumns, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// scanSession reads sessionColumns followed by extra.
func scanSession(r pgx.Row, extra ...any) (*sessiondb.Session, error) {
	var x sessiondb.Session
	var mc, tc, in, out, cr, cw, rt, calls, expiry *int64
	dest := []any{&x.ID, &x.Source, &x.UserID, &x.Model, &x.ModelConfig, &x.SystemPrompt, &x.ParentSessionID, &x.StartedAt, &x.EndedAt, &x.EndReason,
		&mc, &tc, &in, &out, &cr, &cw, &rt,
		&x.BillingProvider, &x.BillingBaseURL, &x.BillingMode, &x.EstimatedCostUSD, &x.ActualCostUSD, &x.CostStatus, &x.CostSource, &x.PricingVersion, &x.Title,
		&calls, &x.Cwd, &x.GitBranch, &x.GitRepoRoot, &x.Archived, &x.RewindCount,
		&x.SessionKey, &x.ChatID, &x.ChatType, &x.ThreadID, &x.DisplayName, &x.OriginJSON, &expiry,
		&x.HandoffState, &x.HandoffPlatform, &x.HandoffError,
		&x.CompressionFailureCooldownUntil, &x.CompressionFailureError, &x.CompressionFallbackStreak}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		dst *int64
		src *int64
	}{{&x.MessageCount, mc}, {&x.ToolCallCount, tc}, {&x.InputTokens, in}, {&x.OutputTokens, out}, {&x.CacheReadTokens, cr}, {&x.CacheWriteTokens, cw}, {&x.ReasoningTokens, rt},
		{&x.APICallCount, calls}, {&x.ExpiryFinalized, expiry}} {
		if c.src != nil {
			*c.dst = *c.src
		}
	}
	return &x, nil
}

// messageColumns are the v6 message columns plus content_bytes, then
// those a newer Hermes added (migration 002), in the order scanMessage
// reads them, qualified by alias m.
const messageColumns = `m.id, m.session_id, m.role, m.content, m.tool_call_id, m.tool_calls, m.tool_name, m."timestamp", m.token_count,
    m.finish_reason, m.reasoning, m.reasoning_details, m.codex_reasoning_items, m.content_bytes,
    m.reasoning_content, m.codex_message_items, m.platform_message_id, COALESCE(m.observed, 0), m.effect_disposition, m.active, m.compacted`

// rawMessage is a message row as stored, before tool_calls is decoded.
type rawMessage struct {
	sessiondb.Message
	toolCalls *string
}

// scanMessage reads messageColumns. Content kept as bytes (NUL, invalid
// UTF-8) comes back exactly.
func scanMessage(r pgx.Row) (*rawMessage, error) {
	var x rawMessage
	var raw []byte
	m := &x.Message
	if err := r.Scan(&m.ID, &m.SessionID, &m.Role, &m.Content, &m.ToolCallID, &x.toolCalls, &m.ToolName, &m.Timestamp, &m.TokenCount,
		&m.FinishReason, &m.Reasoning, &m.ReasoningDetails, &m.CodexReasoningItems, &raw,
		&m.ReasoningContent, &m.CodexMessageItems, &m.PlatformMessageID, &m.Observed, &m.EffectDisposition, &m.Active, &m.Compacted); err != nil {
		return nil, err
	}
	if raw != nil {
		c := string(raw)
		m.Content = &c
	}
	return &x, nil
}

// storableContent splits message content for storage: text PostgreSQL can
// hold as it is goes to content alone; text with NUL bytes or invalid
// UTF-8 goes whole to content_bytes, and content gets its readable rest
// (NULs dropped, invalid bytes as U+FFFD) for search and previews.
func storableContent(c *string) (text *string, raw []byte) {
	if c == nil || (utf8.ValidString(*c) && !strings.Contains(*c, "\x00")) {
		return c, nil
	}
	t := strings.ToValidUTF8(strings.ReplaceAll(*c, "\x00", ""), "\uFFFD")
	return &t, []byte(*c)
}

// checkText refuses text PostgreSQL cannot store (NUL bytes, invalid
// UTF-8) in a column other than content, naming the field.
func checkText(field string, v *string) error {
	if v == nil {
		return nil
	}
	if !utf8.ValidString(*v) {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s is not valid UTF-8, which PostgreSQL text cannot hold", field)
	}
	if strings.Contains(*v, "\x00") {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s holds a NUL byte, which PostgreSQL text cannot hold", field)
	}
	return nil
}

// nullStr is NULL for "", else s.
func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
