package sessiondb

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTitleLength is the longest title, in code points.
const MaxTitleLength = 100

// SanitizeTitle cleans a user-supplied title the way Hermes v6 does: control
// characters and invisible formatting characters are deleted, whitespace
// runs collapse to one space, and the result is trimmed. "" means no title
// (NULL). A result longer than MaxTitleLength code points is invalid.
func SanitizeTitle(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false // a whitespace run is pending
	for _, r := range s {
		if r == utf8.RuneError {
			// Invalid UTF-8 cannot be stored as text faithfully; drop it like
			// any other invisible garbage.
			continue
		}
		if titleDeleted(r) {
			continue
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	t := b.String()
	if n := utf8.RuneCountInString(t); n > MaxTitleLength {
		return "", Errorf(EINVALID, "Title too long (%d chars, max %d)", n, MaxTitleLength)
	}
	return t, nil
}

// titleDeleted reports the code points SanitizeTitle removes: C0 controls
// other than TAB, LF and CR (those become whitespace), DEL, and zero-width or
// bidirectional formatting characters.
func titleDeleted(r rune) bool {
	switch {
	case r <= 0x08, r == 0x0B, r == 0x0C, r >= 0x0E && r <= 0x1F, r == 0x7F:
		return true
	case r >= 0x200B && r <= 0x200F, r >= 0x2028 && r <= 0x202E, r >= 0x2060 && r <= 0x2069:
		return true
	case r == 0xFEFF, r == 0xFFFC, r >= 0xFFF9 && r <= 0xFFFB:
		return true
	}
	return false
}

// LineageBase splits a title of the form "<base> #<digits>" into base and
// number. A title without such a suffix is its own base with number 0.
func LineageBase(title string) (base string, n int) {
	i := strings.LastIndex(title, " #")
	if i < 0 {
		return title, 0
	}
	digits := title[i+2:]
	if digits == "" {
		return title, 0
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return title, 0
		}
	}
	v, err := strconv.Atoi(digits)
	if err != nil { // too many digits to count: treat as huge
		v = int(^uint(0) >> 1)
	}
	return title[:i], v
}

// NextLineageTitle returns the next title in base's lineage given the titles
// that already exist (the base itself and "<base> #..." variants). The
// unnumbered original counts as 1; non-numeric suffixes are ignored. With
// nothing existing the base itself is returned.
func NextLineageTitle(base string, existing []string) string {
	if len(existing) == 0 {
		return base
	}
	max := 1
	for _, t := range existing {
		if t == base {
			continue
		}
		if b, n := LineageBase(t); b == base && n > max {
			max = n
		}
	}
	if max == int(^uint(0)>>1) {
		return base + " #" + strconv.Itoa(max)
	}
	return base + " #" + strconv.Itoa(max+1)
}
