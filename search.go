package sessiondb

import (
	"strings"
)

// SearchFilter narrows SearchMessages. A nil Sources means every source; a
// non-nil empty Sources matches nothing. Limit 0 means 20.
type SearchFilter struct {
	Sources        []string
	ExcludeSources []string
	Roles          []string
	Limit          int
	Offset         int
	// Sort orders the hits: by relevance when empty (SearchByRank), or
	// by the message's time, newest or oldest first, then by relevance,
	// as Hermes' search_messages(sort=...) does. A substring search (a
	// short CJK query) lists newest first whatever the sort.
	Sort SearchSort
}

// SearchSort is the order of SearchMessages' hits.
type SearchSort string

// The orders SearchMessages knows.
const (
	SearchByRank SearchSort = "rank"
	SearchNewest SearchSort = "newest"
	SearchOldest SearchSort = "oldest"
)

// Validate checks f's Limit and Offset with CheckWindow, and its Sort.
func (f SearchFilter) Validate() error {
	switch f.Sort {
	case "", SearchByRank, SearchNewest, SearchOldest:
	default:
		return Errorf(EINVALID, "sort %q is not one of rank, newest, oldest", string(f.Sort))
	}
	return CheckWindow(f.Limit, f.Offset)
}

// ByTime reports whether f orders hits by time (newest or oldest first).
func (f SearchFilter) ByTime() bool { return f.Sort == SearchNewest || f.Sort == SearchOldest }

// SearchHit is one search result. Snippet marks matches with >>> and <<<.
// Context holds up to three {role, content} rows of the same session: the
// previous message, the hit and the next, each cut to 200 code points.
type SearchHit struct {
	ID             int64        `json:"id"`
	SessionID      string       `json:"session_id"`
	Role           string       `json:"role"`
	Snippet        string       `json:"snippet"`
	Timestamp      float64      `json:"timestamp"`
	ToolName       *string      `json:"tool_name"`
	Source         string       `json:"source"`
	Model          *string      `json:"model"`
	SessionStarted float64      `json:"session_started"`
	Context        []ContextRow `json:"context"`
}

// ContextRow is one neighbour of a search hit.
type ContextRow struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ContainsCJK reports whether s holds a CJK ideograph, kana, hangul or CJK
// punctuation code point: the text FTS5's unicode61 tokenizer cannot split
// into words, for which search falls back to substring matching.
func ContainsCJK(s string) bool {
	for _, r := range s {
		switch {
		case r >= 0x4E00 && r <= 0x9FFF,
			r >= 0x3400 && r <= 0x4DBF,
			r >= 0x20000 && r <= 0x2A6DF,
			r >= 0x3000 && r <= 0x303F,
			r >= 0x3040 && r <= 0x309F,
			r >= 0x30A0 && r <= 0x30FF,
			r >= 0xAC00 && r <= 0xD7AF:
			return true
		}
	}
	return false
}

// SearchPlan is what a search decided before it reads the store: the
// query as the sanitizer left it, whether it holds CJK text (for which a
// backend falls back to substring matching when the word index finds
// nothing), and the page to return.
type SearchPlan struct {
	Query  string
	CJK    bool
	Limit  int
	Offset int
}

// PlanSearch makes the decisions every backend's SearchMessages starts
// with, so they are made alike: f is checked (invalid, naming the limit or
// offset), a limit of 0 becomes DefaultLimit, and a query that is blank,
// that sanitize (the backend's translation of Hermes' sanitizer,
// fts.Sanitize) empties, or whose filter names an empty, non-nil list of
// sources matches nothing: ok is false and the search returns no hits
// without reading.
func PlanSearch(query string, f SearchFilter, sanitize func(string) string) (plan SearchPlan, ok bool, err error) {
	if err := f.Validate(); err != nil {
		return SearchPlan{}, false, Wrap("", err, "search messages")
	}
	if strings.TrimSpace(query) == "" || (f.Sources != nil && len(f.Sources) == 0) {
		return SearchPlan{}, false, nil
	}
	q := sanitize(query)
	if q == "" {
		return SearchPlan{}, false, nil
	}
	return SearchPlan{Query: q, CJK: ContainsCJK(q), Limit: PageSize(f.Limit), Offset: f.Offset}, true, nil
}

// CountCJK counts the code points of s that ContainsCJK looks for.
func CountCJK(s string) int {
	n := 0
	for _, r := range s {
		if ContainsCJK(string(r)) {
			n++
		}
	}
	return n
}

// HermesTrigramQuery is the MATCH expression a newer Hermes' search gives
// its trigram index (messages_fts_trigram) for a sanitized CJK query q,
// and ok=false when Hermes takes its substring search instead: fewer than
// three CJK code points in all, or a CJK term of fewer than three. Each
// term is quoted as a phrase (inner quotes doubled); AND, OR and NOT (in
// any case) are kept as they are.
func HermesTrigramQuery(q string) (match string, ok bool) {
	raw := PyStrip(strings.Trim(q, `"`))
	if CountCJK(raw) < 3 {
		return "", false
	}
	var parts []string
	for _, t := range strings.FieldsFunc(raw, pyIsSpace) {
		switch strings.ToUpper(t) {
		case "AND", "OR", "NOT":
			parts = append(parts, t)
			continue
		}
		if ContainsCJK(t) && CountCJK(t) < 3 {
			return "", false
		}
		parts = append(parts, `"`+strings.ReplaceAll(t, `"`, `""`)+`"`)
	}
	return strings.Join(parts, " "), true
}
