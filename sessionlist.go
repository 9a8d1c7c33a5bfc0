package sessiondb

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"math"
	"strconv"
)

// SessionSort is the order of a session listing.
type SessionSort string

// The orders ListSessions knows. Each is by its key, then by id, so the
// order is total and a cursor names one place in it.
const (
	// SortStarted orders by started_at (the default).
	SortStarted SessionSort = "started"
	// SortLastActive orders by the newest message's timestamp
	// (started_at for a session without one): the RichSession's
	// LastActive; a compression chain shown on its root by the newest
	// over the chain, as Hermes' order_by_last_active.
	SortLastActive SessionSort = "last_active"
	// SortCost orders by actual_cost_usd when known, else
	// estimated_cost_usd, else 0 (as UsageReport.Top does).
	SortCost SessionSort = "cost"
	// SortTokens orders by the sum of the five token columns.
	SortTokens SessionSort = "tokens"
)

// MaxSessionPage is the largest page ListSessions returns.
const MaxSessionPage = 500

// SessionQuery selects, orders and pages sessions for ListSessions. Paging
// is by keyset: After is the Next of the previous page, never an offset,
// so rows added or removed between two requests neither repeat nor drop
// out of the rows still to come (a row whose sort key changes may move,
// as it should: by last activity, a session that just got a message
// belongs at the top). The zero value lists the 50 newest top-level,
// unarchived sessions of every source.
type SessionQuery struct {
	// Source, Model and UserID keep sessions with exactly that value; ""
	// means any.
	Source string
	Model  string
	UserID string
	// ParentID keeps the direct children of that session (continuations
	// and forks), whatever IncludeChildren says.
	ParentID string
	// StartedFrom and StartedBefore keep sessions with StartedFrom <=
	// started_at < StartedBefore (epoch seconds); 0 leaves that side open.
	StartedFrom, StartedBefore float64
	// Text keeps sessions whose title contains it (ASCII case ignored) or
	// whose id contains it.
	Text string
	// Sort is the order, SortStarted when empty; newest (largest) first
	// unless Ascending.
	Sort      SessionSort
	Ascending bool
	// IncludeChildren lists child sessions of every kind too; by default
	// the sessions Hermes lists are listed (roots and /branch children,
	// never a delegate subagent), and a root that ended in compression
	// shows its chain's tip as ListSessionsRich does (the row keeps its
	// place by the root's own key; by last activity, the chain's).
	IncludeChildren bool
	// IncludeArchived lists the sessions a newer Hermes archived too;
	// ArchivedOnly those alone.
	IncludeArchived bool
	ArchivedOnly    bool
	// Cwd keeps the sessions that ran in that directory or below it
	// (CwdFilter); MinMessages those whose message_count is at least
	// that.
	Cwd         string
	MinMessages int64
	// Limit is the page size: 0 means 50, at most MaxSessionPage.
	Limit int
	// After is the cursor of the previous page (SessionPage.Next); "" is
	// the first page. A cursor is valid only with the query it came from.
	After string
}

// Validate checks q: a known sort, a limit in range, finite times, and a
// cursor made by the same query. The error is invalid and names the field.
func (q SessionQuery) Validate() error {
	switch q.Sort {
	case "", SortStarted, SortLastActive, SortCost, SortTokens:
	default:
		return Errorf(EINVALID, "sort %q is not one of started, last_active, cost, tokens", string(q.Sort))
	}
	if q.MinMessages < 0 {
		return Errorf(EINVALID, "min messages %d is negative", q.MinMessages)
	}
	if q.Limit < 0 || q.Limit > MaxSessionPage {
		return Errorf(EINVALID, "limit %d is out of range (1 to %d, 0 for 50)", q.Limit, MaxSessionPage)
	}
	for _, t := range []struct {
		field string
		v     float64
	}{{"started_from", q.StartedFrom}, {"started_before", q.StartedBefore}} {
		if math.IsNaN(t.v) || math.IsInf(t.v, 0) {
			return Errorf(EINVALID, "%s is not a number of seconds", t.field)
		}
	}
	_, err := q.Cursor()
	return err
}

// SortOrDefault returns q.Sort, SortStarted when empty.
func (q SessionQuery) SortOrDefault() SessionSort {
	if q.Sort == "" {
		return SortStarted
	}
	return q.Sort
}

// PageLimit returns the page size: q.Limit, 50 when 0.
func (q SessionQuery) PageLimit() int {
	if q.Limit == 0 {
		return 50
	}
	return q.Limit
}

// SessionCursor is a decoded place in a listing: the sort key and id of the
// last row of the previous page.
type SessionCursor struct {
	Key float64
	ID  string
}

// cursorJSON is a cursor's encoded form: the place plus what it is valid
// for (the sort and a digest of the filters).
type cursorJSON struct {
	Sort   SessionSort `json:"s"`
	Key    float64     `json:"k"`
	ID     string      `json:"i"`
	Filter string      `json:"f"`
}

// Cursor decodes q.After: nil for the first page, an invalid error naming
// the cursor when it is malformed or was made by a different query (another
// sort, other filters).
func (q SessionQuery) Cursor() (*SessionCursor, error) {
	if q.After == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(q.After)
	var c cursorJSON
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == "" {
		return nil, Errorf(EINVALID, "cursor is not one a session listing returned")
	}
	if c.Sort != q.SortOrDefault() || c.Filter != q.filterDigest() {
		return nil, Errorf(EINVALID, "cursor belongs to another listing (a different sort or filter): start again from the first page")
	}
	return &SessionCursor{Key: c.Key, ID: c.ID}, nil
}

// NextCursor encodes the place after a row with the given sort key and id,
// for the SessionPage.Next of q's page.
func (q SessionQuery) NextCursor(key float64, id string) string {
	b, _ := json.Marshal(cursorJSON{Sort: q.SortOrDefault(), Key: key, ID: id, Filter: q.filterDigest()})
	return base64.RawURLEncoding.EncodeToString(b)
}

// filterDigest is a short digest of what selects and orders the rows, so a
// cursor is refused by a query it was not made for.
func (q SessionQuery) filterDigest() string {
	h := fnv.New64a()
	for _, s := range []string{q.Source, q.Model, q.UserID, q.ParentID, q.Text,
		strconv.FormatFloat(q.StartedFrom, 'g', -1, 64), strconv.FormatFloat(q.StartedBefore, 'g', -1, 64),
		strconv.FormatBool(q.Ascending), strconv.FormatBool(q.IncludeChildren), strconv.FormatBool(q.IncludeArchived),
		strconv.FormatBool(q.ArchivedOnly), q.Cwd, strconv.FormatInt(q.MinMessages, 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// Page cuts q's page from rows read in q's order, PageLimit plus one when
// more follow, keys[i] being rows[i]'s sort key: at most PageLimit rows,
// and Next set when a row was left over.
func (q SessionQuery) Page(rows []RichSession, keys []float64) *SessionPage {
	n := min(len(rows), q.PageLimit())
	out := &SessionPage{Sessions: append(make([]RichSession, 0, n), rows[:n]...)}
	if n < len(rows) {
		out.Next = q.NextCursor(keys[n-1], rows[n-1].ID)
	}
	return out
}

// SessionPage is one page of ListSessions: the rows in order, and the
// cursor of the next page ("" when this is the last).
type SessionPage struct {
	Sessions []RichSession `json:"sessions"`
	Next     string        `json:"next,omitempty"`
}
