package fts

import (
	"slices"
	"strings"
)

// restoreExact returns what
//
//	for i, p := range phrases { s = strings.ReplaceAll(s, placeholder(i), p) }
//
// returns (Hermes' restore step), without its cost: that loop copies s once
// per phrase, and when the user's text spells placeholders ("\x00Q1\x00")
// its output can grow exponentially, since a restored phrase may itself hold
// placeholders that later rounds expand. When the exact result would be
// longer than maxLen bytes, restoreExact returns "" (nothing to search);
// only a query holding NUL characters can get there.
//
// Why it works: every phrase begins and ends with '"', which no placeholder
// contains, so an occurrence of a placeholder never straddles a restored
// phrase and the text around it. Occurrences in the text are therefore the
// ones already present in s that no earlier round consumed, and occurrences
// inside a restored phrase i are those of the phrase's own text, expanded by
// rounds after i only. Two occurrences overlap only by sharing a NUL, since
// a placeholder holds no NUL between its two ends.
func restoreExact(s string, phrases []string, maxLen int) string {
	r := restorer{phrases: phrases, expanded: make([][]segment, len(phrases)), size: make([]int, len(phrases))}
	for i := range r.size {
		r.size[i] = -1
	}
	top := r.segments(s, 0)
	if r.length(top, maxLen) > maxLen {
		return ""
	}
	var b strings.Builder
	r.write(&b, top)
	return b.String()
}

// segment is a piece of restored text: literal text, or phrase ref expanded.
type segment struct {
	text string
	ref  int // phrase index, or -1 for literal text
}

type restorer struct {
	phrases  []string
	expanded [][]segment // phrase i after rounds i+1…, computed on demand
	size     []int       // its length in bytes, capped; -1 until computed
}

// segments splits text into literal runs and the placeholders rounds from,
// from+1, … replace in it, in the order str.replace would find them.
func (r *restorer) segments(text string, from int) []segment {
	type hit struct{ start, end, idx int } // end is the closing NUL
	var hits []hit
	for p := strings.IndexByte(text, 0); p >= 0; {
		next := strings.IndexByte(text[p+1:], 0)
		if next < 0 {
			break
		}
		end := p + 1 + next
		if idx, ok := placeholderIndex(text[p+1 : end]); ok && idx >= from && idx < len(r.phrases) {
			hits = append(hits, hit{p, end, idx})
		}
		p = end
	}
	// Round by round, leftmost first; an occurrence sharing a NUL with one
	// taken earlier no longer exists when its round comes.
	slices.SortFunc(hits, func(a, b hit) int {
		if a.idx != b.idx {
			return a.idx - b.idx
		}
		return a.start - b.start
	})
	taken := map[int]bool{}
	chosen := hits[:0]
	for _, h := range hits {
		if taken[h.start] || taken[h.end] {
			continue
		}
		taken[h.start], taken[h.end] = true, true
		chosen = append(chosen, h)
	}
	slices.SortFunc(chosen, func(a, b hit) int { return a.start - b.start })
	var segs []segment
	at := 0
	for _, h := range chosen {
		if h.start > at {
			segs = append(segs, segment{text: text[at:h.start], ref: -1})
		}
		segs = append(segs, segment{ref: h.idx})
		at = h.end + 1
	}
	if at < len(text) {
		segs = append(segs, segment{text: text[at:], ref: -1})
	}
	return segs
}

// placeholderIndex parses the inside of a placeholder, "Q" and the decimal
// index as Python's str(int) writes it (no sign, no leading zero).
func placeholderIndex(s string) (int, bool) {
	if len(s) < 2 || s[0] != 'Q' || len(s) > 12 || (s[1] == '0' && len(s) > 2) {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s[1:]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func (r *restorer) phrase(i int) []segment {
	if r.expanded[i] == nil {
		r.expanded[i] = r.segments(r.phrases[i], i+1)
	}
	return r.expanded[i]
}

// length returns the byte length of segs expanded, or some value above
// limit once it exceeds limit.
func (r *restorer) length(segs []segment, limit int) int {
	n := 0
	for _, sg := range segs {
		if sg.ref < 0 {
			n += len(sg.text)
		} else {
			if r.size[sg.ref] < 0 {
				// Phrase i refers only to phrases after i, so this recursion
				// ends; each phrase is measured once.
				r.size[sg.ref] = r.length(r.phrase(sg.ref), limit)
			}
			n += r.size[sg.ref]
		}
		if n > limit {
			return limit + 1
		}
	}
	return n
}

func (r *restorer) write(b *strings.Builder, segs []segment) {
	for _, sg := range segs {
		if sg.ref < 0 {
			b.WriteString(sg.text)
		} else {
			r.write(b, r.phrase(sg.ref))
		}
	}
}
