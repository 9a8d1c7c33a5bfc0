package sessiondb

import (
	"context"
	"strings"
)

// FindSession turns what a person typed into a session id, the one rule the
// command line, the HTTP API and every backend share: an exact id, then a
// unique id prefix, then (when byTitle) a title, where a title names the
// newest session of its lineage ("proj" finds "proj #3",
// ResolveSessionByTitle). A blank ref is invalid; a prefix of several ids is
// a conflict listing up to ten of them, newest first; no match is
// not_found. Callers that destroy sessions pass byTitle=false, so a title
// can never pick the wrong session.
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
			return "", Errorf(ENOTFOUND, "no session has the id, id prefix or title %q: list them with `sessiondb sessions`", ref)
		}
		return "", Errorf(ENOTFOUND, "no session has the id or id prefix %q: list them with `sessiondb sessions`", ref)
	}
	return "", err
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
