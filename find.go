package sessiondb

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// FindSession turns what a person typed into a session id, the one rule the
// command line, the HTTP API and every backend share: an exact id, then a
// unique id prefix, then (when byTitle) a title, where a title names the
// newest session of its lineage ("proj" finds "proj #3",
// ResolveSessionByTitle, exact as Hermes resolves it), then a title that
// differs only in case ("lisbon weekend" finds "Lisbon weekend") when one
// title alone does. A blank ref is invalid; a prefix of several ids is a
// conflict listing up to ten of them, newest first; no match is not_found,
// naming up to five close titles ("did you mean"). Callers that destroy
// sessions pass byTitle=false, so a title can never pick the wrong
// session.
func FindSession(ctx context.Context, s SessionService, ref string, byTitle bool) (string, error) {
	if strings.TrimSpace(ref) == "" {
		return "", Errorf(EINVALID, "the session id is empty: give an id, a unique id prefix or a title (see `sessiondb sessions`)")
	}
	id, err := s.ResolveSessionID(ctx, ref)
	switch ErrorCode(err) {
	case "":
		return id, nil
	case ECONFLICT:
		cands, cerr := sessionsWithPrefix(ctx, s, ref, 10)
		if cerr != nil || len(cands) < 2 {
			return "", Wrap(ECONFLICT, err, "%q is ambiguous", ref)
		}
		return "", Errorf(ECONFLICT, "%q matches several sessions: %s; type more of the id", ref, strings.Join(cands, ", "))
	case ENOTFOUND:
		if byTitle {
			id, terr := s.ResolveSessionByTitle(ctx, ref)
			if terr == nil {
				return id, nil
			}
			if ErrorCode(terr) != ENOTFOUND {
				return "", terr
			}
			return findTitleFolded(ctx, s, ref)
		}
		return "", Errorf(ENOTFOUND, "no session has the id or id prefix %q: list them with `sessiondb sessions`", ref)
	}
	return "", err
}

// maxTitleHints is how many close titles a title not found names.
const maxTitleHints = 5

// findTitleFolded is FindSession's last resort for a title no session holds
// exactly: one title that differs from ref only in case (Unicode case
// folding, "#n" lineage suffixes read as ResolveSessionByTitle reads them)
// names the newest session of its lineage; several, or none, are not_found
// with the close titles, newest first. It reads every session, which only
// a title that is not found costs.
func findTitleFolded(ctx context.Context, s SessionService, ref string) (string, error) {
	want := strings.TrimSpace(ref)
	var (
		id      string   // the newest session of the first folded match
		matches []string // the distinct titles that fold to ref
		close   []string // the distinct titles near ref
	)
	err := EachSession(ctx, s, "", func(x *Session) bool {
		if x.Title == nil || *x.Title == "" {
			return true
		}
		t := *x.Title
		base, _ := LineageBase(t)
		switch {
		case strings.EqualFold(t, want) || strings.EqualFold(base, want):
			if !slices.Contains(matches, base) {
				matches = append(matches, base)
			}
			if id == "" {
				id = x.ID
			}
		case len(close) < maxTitleHints && !slices.Contains(close, t) && nearTitle(t, want):
			close = append(close, t)
		}
		return true
	})
	if err != nil {
		return "", err
	}
	if len(matches) == 1 {
		return id, nil
	}
	hints := append(matches, close...)
	if len(hints) > maxTitleHints {
		hints = hints[:maxTitleHints]
	}
	if len(hints) == 0 {
		return "", Errorf(ENOTFOUND, "no session has the id, id prefix or title %q: list them with `sessiondb sessions`", ref)
	}
	quoted := make([]string, len(hints))
	for i, h := range hints {
		quoted[i] = strconv.Quote(h)
	}
	return "", Errorf(ENOTFOUND, "no session has the id, id prefix or title %q; did you mean: %s", ref, strings.Join(quoted, ", "))
}

// nearTitle reports whether title is close to what a person typed: one
// holds the other whatever the case ("lisbon" and "Lisbon weekend"), they
// are a typo or two apart, or one word typed is a typo away from a word of
// the title ("lisbn").
func nearTitle(title, typed string) bool {
	t, q := strings.ToLower(title), strings.ToLower(typed)
	if q == "" {
		return false
	}
	// A title of a word or two letters is in too many things typed.
	if strings.Contains(t, q) || utf8.RuneCountInString(t) >= 3 && strings.Contains(q, t) {
		return true
	}
	n := utf8.RuneCountInString(q)
	if n >= 4 && editDistance(t, q, 2) <= 2 {
		return true
	}
	// Words shorter than four letters are a typo away from too many.
	if n < 4 || strings.ContainsFunc(q, unicode.IsSpace) {
		return false
	}
	for _, w := range strings.Fields(t) {
		if utf8.RuneCountInString(w) >= 4 && editDistance(w, q, 1) <= 1 {
			return true
		}
	}
	return false
}

// editDistance is the Levenshtein distance between a and b in code points,
// or max+1 as soon as it is known to exceed max.
func editDistance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > max || -d > max {
		return max + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		lo := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			lo = min(lo, cur[j])
		}
		if lo > max {
			return max + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// PrefixMatch is ResolveSessionID's answer when no session has the whole
// id prefix: ids are those of up to two sessions whose id starts with it,
// newest first. None is not_found, two a conflict.
func PrefixMatch(prefix string, ids []string) (string, error) {
	switch len(ids) {
	case 0:
		return "", Errorf(ENOTFOUND, "no session id starts with %q", prefix)
	case 1:
		return ids[0], nil
	}
	return "", Errorf(ECONFLICT, "session id prefix %q is ambiguous: it matches %s and more", prefix, strings.Join(ids, ", "))
}

// sessionsWithPrefix lists up to max session ids starting with prefix,
// newest first: the candidates of an ambiguous prefix.
func sessionsWithPrefix(ctx context.Context, s SessionService, prefix string, max int) ([]string, error) {
	var ids []string
	err := EachSession(ctx, s, "", func(x *Session) bool {
		if strings.HasPrefix(x.ID, prefix) {
			ids = append(ids, x.ID)
		}
		return len(ids) < max
	})
	return ids, err
}

// EachSession calls fn for every session of source ("" means all) in
// SearchSessions order (newest first), reading a page of 500 at a time,
// until fn returns false or the sessions run out.
func EachSession(ctx context.Context, s SessionService, source string, fn func(*Session) bool) error {
	const page = 500
	for off := 0; ; off += page {
		rows, err := s.SearchSessions(ctx, source, page, off)
		if err != nil {
			return err
		}
		for i := range rows {
			if !fn(&rows[i]) {
				return nil
			}
		}
		if len(rows) < page {
			return nil
		}
	}
}

// PruneCandidates lists the sessions PruneSessions(olderThanDays, source)
// would delete at now (PruneCondition's selection: ended, of source if
// given, started before the cutoff), reading only: the previews of a
// prune (the CLI's --dry-run and question, the web UI's confirmation)
// show them.
func PruneCandidates(ctx context.Context, s SessionService, now time.Time, olderThanDays float64, source string) ([]Session, error) {
	if err := CheckPruneDays(olderThanDays); err != nil {
		return nil, err
	}
	cutoff := EpochSeconds(now) - olderThanDays*86400
	doomed := []Session{}
	err := EachSession(ctx, s, source, func(x *Session) bool {
		if x.EndedAt != nil && x.StartedAt < cutoff {
			doomed = append(doomed, *x)
		}
		return true
	})
	return doomed, err
}
