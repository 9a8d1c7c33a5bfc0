package sqlite

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// queries holds the SQL fragments that depend on which columns the file
// has (IMP-7): a v6 column the file lacks (an old file opened read-only)
// reads as NULL; extra columns of a newer Hermes are used where the spec
// says so and otherwise ignored.
type queries struct {
	sessSel string // the 26 v6 session columns and newerSessionColumns, alias s
	// sessNewer: sessSel holds newerSessionColumns. A file with none of
	// them (Hermes v6's, and every store sessiondb makes) reads the 26
	// alone: their defaults are the Session fields' zero values, and
	// scanning 19 constants a row was a third of a listing page's time.
	sessNewer bool
	msgSel    string // the 13 v6 message columns and newerMessageColumns, alias m
	// msgNewer: msgSel holds newerMessageColumns. A file with none of
	// them reads the 13 alone, as sessNewer does for sessions: their
	// defaults are what messageScanner leaves.
	msgNewer bool
	// live is "" or an AND clause keeping the rows of the live
	// conversation (active = 1, docs/hermes-versions.md 4.1), alias m:
	// what Hermes' get_messages and replay read.
	live string
	// searchable is "" or an AND clause hiding the rows a rewind took
	// back (active = 0, compacted = 0), alias m: what Hermes' search
	// finds keeps what a compaction summarised away.
	searchable string
	// archived is the expression of a session's archived flag (a newer
	// Hermes' column), alias s; "" when the file has no such column.
	archived string
	// lastActive: listings by last activity read sessiondb_last_active.
	lastActive bool
	// lastActiveCatchUp is the script that catches the table up, made
	// once for the file's columns.
	lastActiveCatchUp string
}

func selectList(alias string, cols []column, have map[string]bool, override map[string]string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		switch {
		case override[c.name] != "":
			parts[i] = override[c.name]
		case have[c.name]:
			parts[i] = alias + "." + c.name
		default:
			parts[i] = "NULL"
		}
	}
	return strings.Join(parts, ", ")
}

// newerList is the select list of cols, alias alias: a column the file
// has as it is (an integer one NULL read as its default, as Hermes sets
// it), else its default.
func newerList(alias string, cols []newerColumn, have map[string]bool) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		switch {
		case !have[c.name]:
			parts[i] = c.def
		case c.def != "NULL":
			parts[i] = "COALESCE(" + alias + "." + c.name + ", " + c.def + ")"
		default:
			parts[i] = alias + "." + c.name
		}
	}
	return strings.Join(parts, ", ")
}

func buildQueries(si *schemaInfo) queries {
	var q queries
	override := map[string]string{}
	if si.sessCols["system_prompt"] && si.sessCols["system_prompt_hash"] && si.tables["system_prompts"] {
		// A newer Hermes stores each distinct prompt once and leaves
		// sessions.system_prompt NULL.
		override["system_prompt"] = "COALESCE(s.system_prompt, (SELECT sp.prompt FROM system_prompts sp WHERE sp.hash = s.system_prompt_hash))"
	}
	q.sessSel = selectList("s", sessionColumns, si.sessCols, override)
	q.sessNewer = slices.ContainsFunc(newerSessionColumns, func(c newerColumn) bool { return si.sessCols[c.name] })
	if q.sessNewer {
		q.sessSel += ", " + newerList("s", newerSessionColumns, si.sessCols)
	}
	q.msgSel = selectList("m", messageColumns, si.msgCols, nil)
	q.msgNewer = slices.ContainsFunc(newerMessageColumns, func(c newerColumn) bool { return si.msgCols[c.name] })
	if q.msgNewer {
		q.msgSel += ", " + newerList("m", newerMessageColumns, si.msgCols)
	}
	q.lastActive = si.usesLastActive()
	q.lastActiveCatchUp = lastActiveCatchUp(si)
	if si.sessCols["archived"] {
		q.archived = "COALESCE(s.archived, 0) <> 0"
	}
	if si.msgCols["active"] {
		// A NULL active (an older reconciler added the column without its
		// default) is live: Hermes sets it to 1 on every open.
		q.live = " AND COALESCE(m.active, 1) = 1"
		q.searchable = q.live
		if si.msgCols["compacted"] {
			q.searchable = " AND (COALESCE(m.active, 1) = 1 OR COALESCE(m.compacted, 0) = 1)"
		}
	}
	return q
}

type scanner interface{ Scan(dest ...any) error }

// nullable column helpers: the file may hold NULL in any column.
func strPtr(n sql.NullString) *string {
	if !n.Valid {
		return nil
	}
	v := n.String
	return &v
}

func floatPtr(n sql.NullFloat64) *float64 {
	if !n.Valid {
		return nil
	}
	v := n.Float64
	return &v
}

func intPtr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}

// scanSession reads the columns of q.sessSel followed by extra, from one
// row.
func (q queries) scanSession(sc scanner, extra ...any) (*sessiondb.Session, error) {
	x, err := q.newSessionScanner(extra...).scan(sc)
	if err != nil {
		return nil, err
	}
	return &x, nil
}

// sessionScanner reads rows of q.sessSel followed by extra. Its scan
// destinations are made once and reused for every row, as
// messageScanner's are: fresh locals would each escape to the heap, 26
// to 45 allocations a row of a listing page.
type sessionScanner struct {
	x                                                           sessiondb.Session
	id, source                                                  sql.NullString
	userID, model, modelConfig, systemPrompt, parent, endReason sql.NullString
	started                                                     sql.NullFloat64
	ended, est, act                                             sql.NullFloat64
	mc, tc, in, out, cr, cw, rt                                 sql.NullInt64
	bp, bu, bm, cs, csrc, pv, title                             sql.NullString
	cwd, branch, root, key, chat, chatType, thread, display     sql.NullString
	origin, hState, hPlatform, hErr, cErr                       sql.NullString
	cooldown                                                    sql.NullFloat64
	dest                                                        []any
}

func (q queries) newSessionScanner(extra ...any) *sessionScanner {
	ss := &sessionScanner{}
	x := &ss.x
	ss.dest = []any{&ss.id, &ss.source, &ss.userID, &ss.model, &ss.modelConfig, &ss.systemPrompt, &ss.parent, &ss.started, &ss.ended, &ss.endReason,
		&ss.mc, &ss.tc, &ss.in, &ss.out, &ss.cr, &ss.cw, &ss.rt, &ss.bp, &ss.bu, &ss.bm, &ss.est, &ss.act, &ss.cs, &ss.csrc, &ss.pv, &ss.title}
	if q.sessNewer {
		ss.dest = append(ss.dest, &x.APICallCount, &ss.cwd, &ss.branch, &ss.root, &x.Archived, &x.RewindCount,
			&ss.key, &ss.chat, &ss.chatType, &ss.thread, &ss.display, &ss.origin, &x.ExpiryFinalized,
			&ss.hState, &ss.hPlatform, &ss.hErr, &ss.cooldown, &ss.cErr, &x.CompressionFallbackStreak)
	}
	ss.dest = append(ss.dest, extra...)
	return ss
}

// scan reads one row into a Session of its own (the scanner's fields are
// overwritten by the next row).
func (ss *sessionScanner) scan(sc scanner) (sessiondb.Session, error) {
	ss.id = sql.NullString{}
	if err := sc.Scan(ss.dest...); err != nil {
		if ss.id.Valid {
			// The id scans first: a later column that is not what the
			// schema says (text in message_count) names its session.
			return sessiondb.Session{}, fmt.Errorf("session %s: %w", strconv.Quote(ss.id.String), err)
		}
		return sessiondb.Session{}, err
	}
	x := ss.x // the newer numeric columns, scanned in place
	x.ID, x.Source = ss.id.String, ss.source.String
	x.UserID, x.Model, x.ModelConfig, x.SystemPrompt = strPtr(ss.userID), strPtr(ss.model), strPtr(ss.modelConfig), strPtr(ss.systemPrompt)
	x.ParentSessionID, x.EndReason = strPtr(ss.parent), strPtr(ss.endReason)
	x.StartedAt, x.EndedAt = ss.started.Float64, floatPtr(ss.ended)
	x.MessageCount, x.ToolCallCount = ss.mc.Int64, ss.tc.Int64
	x.InputTokens, x.OutputTokens, x.CacheReadTokens, x.CacheWriteTokens, x.ReasoningTokens = ss.in.Int64, ss.out.Int64, ss.cr.Int64, ss.cw.Int64, ss.rt.Int64
	x.BillingProvider, x.BillingBaseURL, x.BillingMode = strPtr(ss.bp), strPtr(ss.bu), strPtr(ss.bm)
	x.EstimatedCostUSD, x.ActualCostUSD = floatPtr(ss.est), floatPtr(ss.act)
	x.CostStatus, x.CostSource, x.PricingVersion, x.Title = strPtr(ss.cs), strPtr(ss.csrc), strPtr(ss.pv), strPtr(ss.title)
	x.Cwd, x.GitBranch, x.GitRepoRoot = strPtr(ss.cwd), strPtr(ss.branch), strPtr(ss.root)
	x.SessionKey, x.ChatID, x.ChatType, x.ThreadID = strPtr(ss.key), strPtr(ss.chat), strPtr(ss.chatType), strPtr(ss.thread)
	x.DisplayName, x.OriginJSON = strPtr(ss.display), strPtr(ss.origin)
	x.HandoffState, x.HandoffPlatform, x.HandoffError = strPtr(ss.hState), strPtr(ss.hPlatform), strPtr(ss.hErr)
	x.CompressionFailureCooldownUntil, x.CompressionFailureError = floatPtr(ss.cooldown), strPtr(ss.cErr)
	return x, nil
}

// rawMessage is a message row as stored, before tool_calls is decoded.
type rawMessage struct {
	sessiondb.Message
	toolCalls sql.NullString
}

// messageScanner reads rows of q.msgSel. Its scan destinations are made
// once and reused for every row: Scan takes ...any, so fresh locals would
// each escape to the heap, an allocation a column on the hottest read.
type messageScanner struct {
	id, tokens                                 sql.NullInt64
	sid, role, content, tcid, toolCalls, tname sql.NullString
	finish, reasoning, rd, codex               sql.NullString
	rc, codexMsg, platformID, effect           sql.NullString
	observed, active, compacted                int64
	ts                                         sql.NullFloat64
	dest                                       []any
}

// newMessageScanner reads q.msgSel. Without the newer columns their
// fields keep newerMessageColumns' defaults: NULL, and a live row
// (active 1).
func (q queries) newMessageScanner() *messageScanner {
	m := &messageScanner{active: 1}
	m.dest = []any{&m.id, &m.sid, &m.role, &m.content, &m.tcid, &m.toolCalls, &m.tname, &m.ts, &m.tokens,
		&m.finish, &m.reasoning, &m.rd, &m.codex}
	if q.msgNewer {
		m.dest = append(m.dest, &m.rc, &m.codexMsg, &m.platformID, &m.observed, &m.effect, &m.active, &m.compacted)
	}
	return m
}

func (ms *messageScanner) scan(sc scanner) (*rawMessage, error) {
	if err := sc.Scan(ms.dest...); err != nil {
		return nil, err
	}
	r := &rawMessage{toolCalls: ms.toolCalls}
	m := &r.Message
	m.ID, m.SessionID, m.Role = ms.id.Int64, ms.sid.String, ms.role.String
	m.Content, m.ToolCallID, m.ToolName = strPtr(ms.content), strPtr(ms.tcid), strPtr(ms.tname)
	m.Timestamp, m.TokenCount = ms.ts.Float64, intPtr(ms.tokens)
	m.FinishReason, m.Reasoning, m.ReasoningDetails, m.CodexReasoningItems = strPtr(ms.finish), strPtr(ms.reasoning), strPtr(ms.rd), strPtr(ms.codex)
	m.ReasoningContent, m.CodexMessageItems, m.PlatformMessageID = strPtr(ms.rc), strPtr(ms.codexMsg), strPtr(ms.platformID)
	m.Observed, m.EffectDisposition, m.Active, m.Compacted = ms.observed, strPtr(ms.effect), ms.active, ms.compacted
	return r, nil
}

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}
