package http

import (
	"net/http"

	"github.com/sessiondb/sessiondb"
)

// sessionsView is the session list page: the filter form as the user
// filled it, one page of rows, and the links to move on.
type sessionsView struct {
	Form    sessionsForm
	Rows    []sessionRow
	Sources []string
	Models  []string
	// Columns are the sortable column headers with their links.
	Columns []sortColumn
	// Next is the URL of the next page ("" on the last); First the URL
	// of the first page when this is not it.
	Next, First string
	// Filtered is set when any filter is on (the page offers to clear
	// them); MoreOpen when one of the folded ones is.
	Filtered, MoreOpen bool
}

// sessionsForm is the filter form's values, as given.
type sessionsForm struct {
	Q, Source, Model, User, From, To, Sort, Order string
	Cwd, MinMessages                              string
	Children, Archived, ArchivedOnly              bool
}

// sessionRow is one session of the list.
type sessionRow struct {
	ID, Title, Preview, Source, Model, EndReason string
	// Kind names a child's kind (branch, delegate; "child" when its
	// row does not say); "" for a root.
	Kind                        string
	Started, LastActive         float64
	Ended, Archived, Child      bool
	Messages, ToolCalls, Tokens int64
	Cost                        float64
	// Chain is the number of sessions of a compression chain the row
	// folds (0 for a single session): its figures are then the chain's
	// totals (sessiondb.RichSession's Chain).
	Chain int64
}

// sortColumn is a column header that sorts: its label, the link that
// sorts by it (the other way round when it is the current sort), and the
// arrow showing the current order.
type sortColumn struct {
	Label, Sort, URL, Arrow string
}

// uiSessions: GET / lists sessions with the API's filters, sorts and
// keyset cursor (sessionQuery), so a link to a page of the UI and a
// request to /api/v1/sessions select the same rows.
func (s *Server) uiSessions(w http.ResponseWriter, r *http.Request) error {
	p, q, page, err := s.sessionPage(r)
	if err != nil {
		return err
	}
	v := sessionsView{Form: sessionsForm{Q: q.Text, Source: q.Source, Model: q.Model, User: q.UserID,
		From: p.str("from"), To: p.str("to"), Sort: string(q.SortOrDefault()), Order: "desc",
		Children: q.IncludeChildren, Archived: q.IncludeArchived, ArchivedOnly: q.ArchivedOnly,
		Cwd: q.Cwd, MinMessages: p.str("min_messages")}}
	if q.Ascending {
		v.Form.Order = "asc"
	}
	more := q.Model != "" || q.UserID != "" || q.StartedFrom != 0 || q.StartedBefore != 0 || q.IncludeChildren || q.IncludeArchived ||
		q.ArchivedOnly || q.Cwd != "" || q.MinMessages != 0
	v.Filtered = more || q.Text != "" || q.Source != ""
	v.MoreOpen = more
	for _, x := range page.Sessions {
		row := toSessionRow(&x)
		row.Kind = sessiondb.ListedChildKind(&x.Session, q.IncludeChildren || q.ParentID != "")
		v.Rows = append(v.Rows, row)
	}
	base := r.URL.Path + "?" + r.URL.RawQuery
	if page.Next != "" {
		v.Next = withQuery(base, "cursor", page.Next)
	}
	if q.After != "" {
		v.First = withQuery(base, "cursor", "")
	}
	for _, c := range []struct{ label, sort string }{
		{"Started", string(sessiondb.SortStarted)}, {"Last active", string(sessiondb.SortLastActive)},
		{"Tokens (in+out)", string(sessiondb.SortTokens)}, {"Cost", string(sessiondb.SortCost)},
	} {
		col := sortColumn{Label: c.label, Sort: c.sort, URL: withQuery(base, "sort", c.sort, "order", "", "cursor", "")}
		if c.sort == v.Form.Sort {
			col.Arrow = "↓"
			if q.Ascending {
				col.Arrow = "↑"
			} else {
				col.URL = withQuery(base, "sort", c.sort, "order", "asc", "cursor", "")
			}
		}
		v.Columns = append(v.Columns, col)
	}
	v.Sources, v.Models = s.facets(r.Context())
	s.page(w, r, "index", v)
	return nil
}

// toSessionRow is a list row: a compression chain's row shows the
// chain's totals for every figure, with the root's start and the tip's
// last activity, where Hermes' projection mixes the root's tokens and
// cost with the tip's counts.
func toSessionRow(x *sessiondb.RichSession) sessionRow {
	row := sessionRow{ID: x.ID, Title: deref(x.Title), Preview: x.Preview, Source: x.Source, Model: deref(x.Model),
		EndReason: deref(x.EndReason), Started: x.StartedAt, LastActive: x.LastActive,
		Ended: x.EndedAt != nil, Archived: x.Archived != 0, Child: x.ParentSessionID != nil && *x.ParentSessionID != "",
		Messages: x.MessageCount, ToolCalls: x.ToolCallCount, Tokens: x.Tokens(), Cost: sessionCost(&x.Session)}
	if c := x.Chain; c != nil {
		row.Messages, row.ToolCalls, row.Tokens, row.Cost, row.Chain = c.Messages, c.ToolCalls, c.Tokens(), c.CostUSD, c.Sessions
	}
	return row
}

// sessionCost is what a session cost by sessiondb.CostRule, as
// ListSessions sorts by.
func sessionCost(x *sessiondb.Session) float64 {
	usd, _ := sessiondb.SessionCost(x)
	return usd
}
