package sessiondb

import "strings"

// SearchFilter narrows SearchMessages. A nil Sources means every source; a
// non-nil empty Sources matches nothing. Limit 0 means 20.
type SearchFilter struct {
	Sources        []string
	ExcludeSources []string
	Roles          []string
	Limit          int
	Offset         int
}

// Validate checks f's Limit and Offset with CheckWindow.
func (f SearchFilter) Validate() error { return CheckWindow(f.Limit, f.Offset) }

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
