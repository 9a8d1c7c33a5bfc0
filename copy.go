package sessiondb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// CopyBatch is how many sessions Copy hands to ImportSessions at once.
const CopyBatch = 50

// CopyReport says what Copy did and what it verified.
type CopyReport struct {
	// Sessions is how many sessions the source holds; Copied of them were
	// imported now, Skipped were in the target already (an earlier,
	// interrupted run, or the same id there before).
	Sessions int `json:"sessions"`
	Copied   int `json:"copied"`
	Skipped  int `json:"skipped"`
	// Messages counts the source's messages.
	Messages int64 `json:"messages"`
	// Checksum is the checksum of the source's sessions (HistoryChecksum),
	// which the target's copies of them match.
	Checksum string `json:"checksum"`
}

// Copy copies every session of from into to, with its messages, title,
// lineage (parent links), token counters and costs, through the import
// service: parents before their children, CopyBatch sessions per
// ImportSessions call, each session all-or-nothing. Sessions already in to
// are skipped, so a copy that was interrupted is resumed by running it
// again, and running it twice changes nothing. progress, when not nil, is
// called after each batch with the sessions done and the total.
//
// At the end it verifies the copy: the checksum of every copied session
// read back from to must equal the source's (see HistoryChecksum); a
// session that differs (one that was in to before, with other content) is
// a conflict naming it. A title held in to by another session stops the
// copy with conflict.
func Copy(ctx context.Context, from, to Store, progress func(done, total int)) (*CopyReport, error) {
	type node struct {
		id, parent string
	}
	var all []node
	err := EachSession(ctx, from, "", func(s *Session) bool {
		n := node{id: s.ID}
		if s.ParentSessionID != nil {
			n.parent = *s.ParentSessionID
		}
		all = append(all, n)
		return true
	})
	if err != nil {
		return nil, Wrap("", err, "copy: list the source's sessions")
	}
	// EachSession lists newest first; oldest first puts nearly every
	// parent before its children, and the walk below makes sure of it.
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	byID := make(map[string]node, len(all))
	for _, n := range all {
		byID[n.id] = n
	}
	// Each session goes after its ancestors: walk up the unplaced ones
	// (marking them, so a cycle in damaged data ends the walk) and place
	// the chain from the top down.
	order := make([]string, 0, len(all))
	placed := make(map[string]bool, len(all))
	for _, n := range all {
		var chain []string
		for cur := n.id; cur != "" && !placed[cur]; {
			x, ok := byID[cur]
			if !ok {
				break // a parent the source lacks: the copy has none either
			}
			placed[cur] = true
			chain = append(chain, cur)
			cur = x.parent
		}
		for i := len(chain) - 1; i >= 0; i-- {
			order = append(order, chain[i])
		}
	}

	rep := &CopyReport{Sessions: len(order)}
	for start := 0; start < len(order); start += CopyBatch {
		end := min(start+CopyBatch, len(order))
		recs := make([]map[string]any, 0, end-start)
		for _, id := range order[start:end] {
			rec, err := from.ExportSession(ctx, id)
			if ErrorCode(err) == ENOTFOUND {
				continue // deleted since the listing
			}
			if err != nil {
				return rep, Wrap("", err, "copy: read session %s", id)
			}
			recs = append(recs, rec)
		}
		done, err := to.ImportSessions(ctx, recs)
		for _, ok := range done {
			if ok {
				rep.Copied++
			} else {
				rep.Skipped++
			}
		}
		if err != nil {
			return rep, Wrap("", err, "copy")
		}
		if progress != nil {
			progress(end, len(order))
		}
	}

	src, n, err := HistoryChecksum(ctx, from, order)
	if err != nil {
		return rep, err
	}
	dst, _, err := HistoryChecksum(ctx, to, order)
	if err != nil {
		return rep, err
	}
	rep.Messages, rep.Checksum = n, src.Sum
	if src.Sum != dst.Sum {
		var bad []string
		for _, id := range order {
			if src.Sessions[id] != dst.Sessions[id] {
				bad = append(bad, id)
				if len(bad) == 5 {
					break
				}
			}
		}
		return rep, Errorf(ECONFLICT, "copy: the target's copies differ from the source for sessions %s (were they in the target before, with other content?)", strings.Join(bad, ", "))
	}
	return rep, nil
}

// Checksums is the checksum of a set of sessions and of each of them.
type Checksums struct {
	Sum      string
	Sessions map[string]string // session id → its checksum
}

// v6SessionKeys are the session columns a checksum covers: those of
// schema v6 every backend keeps, less message_count and tool_call_count,
// which an import recomputes from the messages.
var v6SessionKeys = []string{
	"id", "source", "user_id", "model", "model_config", "system_prompt", "parent_session_id",
	"started_at", "ended_at", "end_reason", "input_tokens", "output_tokens", "cache_read_tokens",
	"cache_write_tokens", "reasoning_tokens", "billing_provider", "billing_base_url", "billing_mode",
	"estimated_cost_usd", "actual_cost_usd", "cost_status", "cost_source", "pricing_version", "title",
}

// v6MessageKeys are the message columns a checksum covers: all of schema
// v6's but the id, which a copy into a store holding that id renumbers.
var v6MessageKeys = []string{
	"role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
	"token_count", "finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items",
}

// HistoryChecksum is a SHA-256 over the export of the sessions ids of s
// (ExportSession, read as JSON as an export file holds it): per session,
// its v6 columns (but the two counters) and its messages in order with
// their v6 columns (but the id); then over the sessions in id order.
// Equal checksums mean equal histories, whichever backend holds them. A
// missing session counts as empty. It also returns how many messages the
// sessions hold.
func HistoryChecksum(ctx context.Context, s Store, ids []string) (*Checksums, int64, error) {
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	c := &Checksums{Sessions: make(map[string]string, len(ids))}
	total := sha256.New()
	var messages int64
	for _, id := range sorted {
		rec, err := s.ExportSession(ctx, id)
		if ErrorCode(err) == ENOTFOUND {
			rec = nil
		} else if err != nil {
			return nil, 0, Wrap("", err, "checksum of session %s", id)
		}
		sum, n, err := recordChecksum(rec)
		if err != nil {
			return nil, 0, Wrap(EINTERNAL, err, "checksum of session %s", id)
		}
		messages += n
		c.Sessions[id] = sum
		fmt.Fprintf(total, "%s %s\n", id, sum)
	}
	c.Sum = hex.EncodeToString(total.Sum(nil))
	return c, messages, nil
}

// recordChecksum is one session's checksum and message count.
func recordChecksum(rec map[string]any) (string, int64, error) {
	if rec == nil {
		return "", 0, nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", 0, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", 0, err
	}
	kept := map[string]any{}
	for _, k := range v6SessionKeys {
		kept[k] = doc[k]
	}
	msgs, _ := doc["messages"].([]any)
	out := make([]map[string]any, 0, len(msgs))
	for _, raw := range msgs {
		m, _ := raw.(map[string]any)
		km := map[string]any{}
		for _, k := range v6MessageKeys {
			km[k] = m[k]
		}
		out = append(out, km)
	}
	kept["messages"] = out
	canon, err := json.Marshal(kept) // maps marshal with sorted keys
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), int64(len(out)), nil
}
