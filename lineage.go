package sessiondb

import (
	"context"
	"slices"
)

// LineageNode is one session of a lineage tree: who it is, how it ran, and
// the sessions that continue it (compression continuations, forks).
type LineageNode struct {
	ID        string         `json:"id"`
	Title     *string        `json:"title"`
	Source    string         `json:"source"`
	StartedAt float64        `json:"started_at"`
	EndedAt   *float64       `json:"ended_at"`
	EndReason *string        `json:"end_reason"`
	Messages  int64          `json:"message_count"`
	Children  []*LineageNode `json:"children,omitempty"`
	// Selected marks the session the lineage was asked for.
	Selected bool `json:"selected,omitempty"`
}

// MaxLineageDepth bounds the walk up a parent chain, so a cycle written by
// hand into a file cannot hang it; MaxLineageNodes bounds the whole tree.
const (
	MaxLineageDepth = 1000
	MaxLineageNodes = 10000
)

func lineageNode(s *Session) *LineageNode {
	return &LineageNode{ID: s.ID, Title: s.Title, Source: s.Source, StartedAt: s.StartedAt,
		EndedAt: s.EndedAt, EndReason: s.EndReason, Messages: s.MessageCount}
}

// Lineage returns the tree rooted at id's oldest ancestor holding the
// chain of ancestors down to id (marked Selected), and under id every
// descendant, oldest first. Siblings of the ancestors are left out: they
// are other lineages. The walk up stops at a missing parent (an orphan
// left by delete or prune) or a cycle; the walk down asks the store for
// each session's children (ListSessions by ParentID) and stops after
// MaxLineageNodes sessions. An unknown id is not_found.
func Lineage(ctx context.Context, st SessionService, id string) (*LineageNode, error) {
	self, err := st.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	top := lineageNode(self)
	top.Selected = true
	seen[top.ID] = true
	queue := []*LineageNode{top}
	for len(queue) > 0 && len(seen) < MaxLineageNodes {
		n := queue[0]
		queue = queue[1:]
		q := SessionQuery{ParentID: n.ID, Ascending: true, Limit: MaxSessionPage}
		for {
			page, err := st.ListSessions(ctx, q)
			if err != nil {
				return nil, err
			}
			for i := range page.Sessions {
				k := &page.Sessions[i].Session
				if seen[k.ID] || len(seen) >= MaxLineageNodes {
					continue
				}
				seen[k.ID] = true
				kn := lineageNode(k)
				n.Children = append(n.Children, kn)
				queue = append(queue, kn)
			}
			if page.Next == "" {
				break
			}
			q.After = page.Next
		}
		slices.SortStableFunc(n.Children, func(a, b *LineageNode) int {
			switch {
			case a.StartedAt < b.StartedAt:
				return -1
			case a.StartedAt > b.StartedAt:
				return 1
			}
			return 0
		})
	}
	for cur, depth := self, 0; cur.ParentSessionID != nil && *cur.ParentSessionID != "" && depth < MaxLineageDepth; depth++ {
		p, err := st.GetSession(ctx, *cur.ParentSessionID)
		if ErrorCode(err) == ENOTFOUND || (err == nil && seen[p.ID]) {
			break
		}
		if err != nil {
			return nil, err
		}
		seen[p.ID] = true
		pn := lineageNode(p)
		pn.Children = []*LineageNode{top}
		top, cur = pn, p
	}
	return top, nil
}
