package sessiondb

import (
	"slices"
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
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			// Invalid UTF-8 cannot be stored as text faithfully; drop it like
			// any other invisible garbage. A real U+FFFD is a visible
			// character and stays, as in Hermes.
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
// number, the way Hermes reads it with Python's re.match(r'^(.*?) #(\d+)$'):
// the digits are any Unicode decimal digits, the base may not hold a line
// feed, and one final line feed after the digits is allowed (and dropped
// with the suffix). A title without such a suffix is its own base with
// number 0. A number too large for an int is reported as the largest int.
func LineageBase(title string) (base string, n int) {
	i, digits, ok := lineageSuffix(title)
	if !ok {
		return title, 0
	}
	for _, d := range digits {
		if n > (int(^uint(0)>>1)-9)/10 {
			return title[:i], int(^uint(0) >> 1)
		}
		n = n*10 + int(d-'0')
	}
	return title[:i], n
}

// NextLineageTitle returns the next title in base's lineage, given the
// titles that exist in it: those equal to base or starting with
// "<base> #" (the store's LIKE match, which ignores ASCII case). With none
// it returns base. Otherwise it returns "<base> #<max+1>", max being the
// largest trailing " #<digits>" number among them, at least 1 because the
// unnumbered original counts as 1. As in Hermes, any title of the set ending
// in " #<digits>" counts ("<base> #draft #7" gives 7), other suffixes are
// ignored, and numbers have no upper bound.
func NextLineageTitle(base string, existing []string) string {
	if len(existing) == 0 {
		return base
	}
	max := "1"
	for _, t := range existing {
		if _, digits, ok := lineageSuffix(t); ok && decimalLess(max, digits) {
			max = digits
		}
	}
	return base + " #" + decimalIncrement(max)
}

// lineageSuffix finds a trailing " #<digits>" in t as Python's
// re.match(r'^.* #(\d+)$') does: \d is any Unicode decimal digit, '.' does
// not match a line feed, and '$' also matches before a final line feed. It
// returns where " #" starts and the digits as ASCII without leading zeros
// ("0" for zero).
func lineageSuffix(t string) (at int, digits string, ok bool) {
	s := strings.TrimSuffix(t, "\n")
	j := len(s)
	var rev []byte
	for j > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		v, isDigit := decimalValue(r)
		if !isDigit {
			break
		}
		rev = append(rev, byte('0'+v))
		j -= size
	}
	if len(rev) == 0 || !strings.HasSuffix(s[:j], " #") || strings.Contains(s[:j-2], "\n") {
		return 0, "", false
	}
	slices.Reverse(rev)
	d := strings.TrimLeft(string(rev), "0")
	if d == "" {
		d = "0"
	}
	return j - 2, d, true
}

// decimalValue returns the value of a Unicode decimal digit (category Nd).
// Unicode encodes every such digit in a contiguous run of ten, zero first,
// and runs of ten may abut (the mathematical digits), so the value is the
// distance from the start of the whole contiguous stretch, modulo ten.
func decimalValue(r rune) (int, bool) {
	if '0' <= r && r <= '9' {
		return int(r - '0'), true
	}
	if r < utf8.RuneSelf || !unicode.IsDigit(r) {
		return 0, false
	}
	start := r
	for unicode.IsDigit(start - 1) {
		start--
	}
	return int(r-start) % 10, true
}

// decimalLess compares two ASCII decimal numbers without leading zeros.
func decimalLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// decimalIncrement adds one to an ASCII decimal number.
func decimalIncrement(d string) string {
	b := []byte(d)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < '9' {
			b[i]++
			return string(b)
		}
		b[i] = '0'
	}
	return "1" + string(b)
}
