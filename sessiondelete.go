package sessiondb

import (
	"encoding/json"
	"sort"
)

// SessionDeleteTx is a backend's side of a deletion (SessionsToDelete,
// DeleteSessions, DeleteSessionsWhere): statements run one at a time in its
// write transaction.
type SessionDeleteTx interface {
	// Exec runs q (its placeholders the backend's own) with args, the
	// given step of the deletion, and returns how many rows it changed.
	Exec(step DeleteStep, q string, args ...any) (int64, error)
	// IDs runs q, a query of one text column, with args and returns its
	// values.
	IDs(q string, args ...any) ([]string, error)
	// Links runs LinksSQL and returns its rows.
	Links() ([]SessionLink, error)
	// In returns ids as the backend's SQL for the right side of IN, which
	// takes one argument, and that argument.
	In(ids []string) (string, any)
}

// DeleteStep names a step of a deletion, so a backend can say in its
// errors which one failed.
type DeleteStep int

// The steps of DeleteSessions, in their order.
const (
	DeleteOrphanChildren DeleteStep = iota
	DeleteMessages
	DeleteSessionRows
)

// SessionLink is what the delete cascade reads of a session: its id, its
// parent and its model_config text.
type SessionLink struct {
	ID          string
	ParentID    *string
	ModelConfig *string
}

// LinksSQL reads the SessionLinks a cascade needs, in SQL that SQLite and
// PostgreSQL both run: the sessions whose model_config may hold a
// delegate marker (a superset; DelegateMarker decides).
const LinksSQL = "SELECT id, parent_session_id, model_config FROM sessions WHERE model_config LIKE '%delegate%'"

// DelegateMarker returns the _delegate_from marker a newer Hermes puts in
// the model_config of a delegate subagent's session (spawned by the
// parent it names; '__orphaned__' for one whose parent is gone), read as
// Hermes' json_extract(model_config, '$._delegate_from') reads it: ok when
// modelConfig is a JSON object whose _delegate_from is there and not null,
// name the marker when it is a string ("" for any other value, which names
// no session). Hermes' delete fails on a model_config that is not JSON;
// here such a session simply carries no marker.
func DelegateMarker(modelConfig string) (name string, ok bool) {
	return configMarker(modelConfig, "_delegate_from")
}

// configMarker reads member key of modelConfig as DelegateMarker reads
// _delegate_from.
func configMarker(modelConfig, key string) (name string, ok bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(modelConfig), &obj) != nil {
		return "", false
	}
	raw, ok := obj[key]
	if !ok || string(raw) == "null" {
		return "", false
	}
	if json.Unmarshal(raw, &name) != nil {
		return "", true
	}
	return name, true
}

// ListedChildKind names what kind of child a listed session is, "" for a
// root: its marker's kind (ChildKind), else, when the listing holds only
// what Hermes lists (everyChild false), "branch": an unmarked child among
// the roots is an older Hermes' branch, whose parent ended "branched"
// before it started. With every child listed, an unmarked one is "child".
func ListedChildKind(s *Session, everyChild bool) string {
	if s.ParentSessionID == nil || *s.ParentSessionID == "" {
		return "" // a root: its model_config is not read
	}
	switch k := ChildKind(s); {
	case k != "":
		return k
	case !everyChild:
		return "branch"
	}
	return "child"
}

// ChildKind names what kind of child s is by the markers a newer Hermes
// writes in its model_config: "branch" (_branched_from), "delegate"
// (_delegate_from), or "" when it carries neither (a compression
// continuation, an older Hermes' branch or subagent, or a root).
func ChildKind(s *Session) string {
	if s.ModelConfig == nil {
		return ""
	}
	if _, ok := configMarker(*s.ModelConfig, "_branched_from"); ok {
		return "branch"
	}
	if _, ok := configMarker(*s.ModelConfig, "_delegate_from"); ok {
		return "delegate"
	}
	return ""
}

// Delegates returns the delegate subagent sessions that go with the
// sessions parents when Hermes' delete_session deletes them
// (_collect_delegate_child_ids): among links, a session whose marker
// names one of them, or that carries a marker and whose parent is one of
// them, and so on for the sessions found, never one of parents itself.
// Other children (branches, compression continuations, untagged ones) are
// orphaned, not deleted. The ids are sorted.
func Delegates(links []SessionLink, parents []string) []string {
	type link struct {
		parent, marker string
		marked         bool
	}
	byID := make(map[string]link, len(links))
	for _, l := range links {
		var x link
		if l.ParentID != nil {
			x.parent = *l.ParentID
		}
		if l.ModelConfig != nil {
			x.marker, x.marked = DelegateMarker(*l.ModelConfig)
		}
		if x.marked {
			byID[l.ID] = x
		}
	}
	found := make(map[string]bool, len(parents))
	frontier := make(map[string]bool, len(parents))
	for _, p := range parents {
		found[p], frontier[p] = true, true
	}
	var out []string
	for len(frontier) > 0 {
		next := map[string]bool{}
		for id, l := range byID {
			if found[id] {
				continue
			}
			if frontier[l.marker] && l.marker != "" || frontier[l.parent] && l.parent != "" {
				next[id] = true
				found[id] = true
				out = append(out, id)
			}
		}
		frontier = next
	}
	sort.Strings(out)
	return out
}

// SessionsToDelete returns the ids of the sessions cond (a condition on
// the sessions table's own columns, with args) selects and, with
// delegates, their delegate subagents (Delegates) after them: what
// DeleteSessions then deletes. DeleteSession cascades to delegates, as
// Hermes' delete_session does; PruneSessions does not, as Hermes'
// prune_sessions does not.
func SessionsToDelete(tx SessionDeleteTx, cond string, args []any, delegates bool) ([]string, error) {
	ids, err := tx.IDs("SELECT id FROM sessions WHERE "+cond, args...)
	if err != nil || !delegates || len(ids) == 0 {
		return ids, err
	}
	links, err := tx.Links()
	if err != nil {
		return nil, err
	}
	return append(ids, Delegates(links, ids)...), nil
}

// DeleteSessions deletes the sessions ids: it orphans their children (the
// ones not deleted with them), deletes their messages, then the sessions,
// and returns how many sessions it deleted. Orphaning first keeps the
// parent foreign key satisfied whichever of them reference each other.
func DeleteSessions(tx SessionDeleteTx, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	in, arg := tx.In(ids)
	if _, err := tx.Exec(DeleteOrphanChildren, "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN "+in, arg); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(DeleteMessages, "DELETE FROM messages WHERE session_id IN "+in, arg); err != nil {
		return 0, err
	}
	return tx.Exec(DeleteSessionRows, "DELETE FROM sessions WHERE id IN "+in, arg)
}

// DeleteSessionsWhere is SessionsToDelete, then DeleteSessions: it returns
// the ids it deleted.
func DeleteSessionsWhere(tx SessionDeleteTx, cond string, args []any, delegates bool) ([]string, error) {
	ids, err := SessionsToDelete(tx, cond, args, delegates)
	if err != nil {
		return nil, err
	}
	if _, err := DeleteSessions(tx, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// PruneCondition is PruneSessions' selection for SessionsToDelete: the
// ended sessions started before cutoff (epoch seconds), of source unless
// it is "". mark(n) is the backend's placeholder of the n-th argument.
func PruneCondition(cutoff float64, source string, mark func(n int) string) (string, []any) {
	cond := "started_at < " + mark(1) + " AND ended_at IS NOT NULL"
	args := []any{cutoff}
	if source != "" {
		cond += " AND source = " + mark(2)
		args = append(args, source)
	}
	return cond, args
}
