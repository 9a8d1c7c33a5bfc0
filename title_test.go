package sessiondb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// deletedByTitle lists the code points SanitizeTitle must delete (spec 5.1
// steps 2 and 3), as inclusive ranges.
var deletedByTitle = [][2]rune{
	{0x00, 0x08}, {0x0B, 0x0B}, {0x0C, 0x0C}, {0x0E, 0x1F}, {0x7F, 0x7F},
	{0x200B, 0x200F}, {0x2028, 0x202E}, {0x2060, 0x2069},
	{0xFEFF, 0xFEFF}, {0xFFFC, 0xFFFC}, {0xFFF9, 0xFFFB},
}

func isDeletedByTitle(r rune) bool {
	for _, rg := range deletedByTitle {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

func TestSanitizeTitle(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"spec: white space and zero-width", "  a\t\nb\u200b c  ", "a b c"},
		{"spec: NUL deleted", "hello\x00world", "helloworld"},
		{"spec: only invisibles", "\x00\x01\u200b\ufeff", ""},
		{"empty", "", ""},
		{"only white space", " \t\r\n ", ""},
		{"emoji kept", "ship it 🚀", "ship it 🚀"},
		{"CJK kept", "大别山项目", "大别山项目"},
		{"accents kept", "café crème", "café crème"},
		{"punctuation kept", `a-b_c.d!?'"#$%&()`, `a-b_c.d!?'"#$%&()`},
		{"TAB collapses", "a\tb", "a b"},
		{"LF collapses", "a\nb", "a b"},
		{"CR LF collapses", "a\r\nb", "a b"},
		{"mixed run collapses", "a \t\n\r  b", "a b"},
		{"Unicode spaces collapse and trim", "\u00a0a\u3000\u2003b\u202f", "a b"},
		{"NEL is white space", "a\u0085b", "a b"},
		{"deleted char joins words", "a\u200bb", "ab"},
		{"deleted char between spaces", "a \u2060 b", "a b"},
		{"C1 controls other than NEL kept", "a\u0080b\u009fc", "a\u0080b\u009fc"},
		{"hyphen after zero-width range kept", "a\u2010b", "a\u2010b"},
		{"U+2027 kept", "a\u2027b", "a\u2027b"},
		{"U+206A kept", "a\u206ab", "a\u206ab"},
		{"U+FFF8 kept", "a\ufff8b", "a\ufff8b"},
		{"replacement character kept", "a\ufffdb", "a\ufffdb"},
		{"invalid UTF-8 dropped", "a\xffb\xc3", "ab"},
		{"exactly 100 multi-byte", strings.Repeat("é", 100), strings.Repeat("é", 100)},
		{"100 after collapsing", strings.Repeat("ab ", 33) + "   x" + "\u200b\u200b", strings.Repeat("ab ", 33) + "x"},
		{"100 after trimming", "   " + strings.Repeat("界", 100) + "\n\t", strings.Repeat("界", 100)},
	}
	for _, rg := range deletedByTitle {
		for _, r := range []rune{rg[0], rg[1]} {
			tests = append(tests, struct{ name, in, want string }{
				name: fmt.Sprintf("U+%04X deleted", r), in: "x" + string(r) + "y", want: "xy",
			})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SanitizeTitle(tc.in)
			if err != nil {
				t.Fatalf("SanitizeTitle(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("SanitizeTitle(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSanitizeTitleTooLong(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
	}{
		{"101 ASCII", strings.Repeat("a", 101), 101},
		{"101 two-byte", strings.Repeat("é", 101), 101},
		{"101 four-byte", strings.Repeat("🚀", 101), 101},
		{"length counted after collapsing", strings.Repeat("a  ", 60), 119},
		{"long CJK", strings.Repeat("界", 250), 250},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SanitizeTitle(tc.in)
			if err == nil {
				t.Fatalf("SanitizeTitle(%d code points) = %q, want an error", utf8.RuneCountInString(tc.in), got)
			}
			if code := ErrorCode(err); code != EINVALID {
				t.Errorf("code = %q, want %q", code, EINVALID)
			}
			want := fmt.Sprintf("Title too long (%d chars, max 100)", tc.n)
			if err.Error() != want {
				t.Errorf("message = %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestLineageBase(t *testing.T) {
	tests := []struct {
		name, in, base string
		n              int
	}{
		{"no suffix", "my project", "my project", 0},
		{"numbered", "my project #2", "my project", 2},
		{"multi-digit", "my project #12", "my project", 12},
		{"only the last suffix", "a #1 #2", "a #1", 2},
		{"leading zeros", "p #007", "p", 7},
		{"hash without digits", "my project #", "my project #", 0},
		{"non-numeric suffix", "proj #hashtag", "proj #hashtag", 0},
		{"mixed suffix", "proj #2a", "proj #2a", 0},
		{"no space before hash", "proj#2", "proj#2", 0},
		{"needs the space", "#2", "#2", 0},
		{"empty base", " #2", "", 2},
		{"Unicode digits count", "x #\u0663", "x", 3},
		{"mathematical digits count", "x #\U0001D7D9\U0001D7DA", "x", 12},
		{"final line feed allowed", "x #2\n", "x", 2},
		{"two final line feeds not", "x #2\n\n", "x #2\n\n", 0},
		{"line feed in base not", "a\nb #2", "a\nb #2", 0},
		{"huge number saturates", "x #99999999999999999999999", "x", int(^uint(0) >> 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, n := LineageBase(tc.in)
			if base != tc.base || n != tc.n {
				t.Errorf("LineageBase(%q) = %q, %d; want %q, %d", tc.in, base, n, tc.base, tc.n)
			}
		})
	}
}

func TestNextLineageTitle(t *testing.T) {
	tests := []struct {
		name     string
		title    string // what the caller asked about; its base is used
		existing []string
		want     string
	}{
		{"spec: none exists", "my project", nil, "my project"},
		{"spec: original exists", "my project", []string{"my project"}, "my project #2"},
		{"spec: #2 and #3 exist", "my project", []string{"my project", "my project #2", "my project #3"}, "my project #4"},
		{"spec: asked from #2", "my project #2", []string{"my project", "my project #2"}, "my project #3"},
		{"numbered variants only", "my project", []string{"my project #5"}, "my project #6"},
		{"non-numeric suffix ignored", "proj", []string{"proj", "proj #draft"}, "proj #2"},
		{"numbers compare as numbers", "p", []string{"p #9", "p #10"}, "p #11"},
		{"leading zeros", "p", []string{"p #007"}, "p #8"},
		{"ASCII-case variant from LIKE counts", "my project", []string{"my project", "MY PROJECT #5"}, "my project #6"},
		{"last suffix of a nested title counts", "proj", []string{"proj #draft #7"}, "proj #8"},
		{"Unicode digits", "x", []string{"x #\u0663"}, "x #4"},
		{"no upper bound", "x", []string{"x #99999999999999999999"}, "x #100000000000000000000"},
		{"zero counts as below the original", "x", []string{"x #0"}, "x #2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := LineageBase(tc.title)
			if got := NextLineageTitle(base, tc.existing); got != tc.want {
				t.Errorf("NextLineageTitle(%q, %q) = %q, want %q", base, tc.existing, got, tc.want)
			}
		})
	}
}

func TestContainsCJK(t *testing.T) {
	ranges := [][2]rune{
		{0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x20000, 0x2A6DF}, {0x3000, 0x303F},
		{0x3040, 0x309F}, {0x30A0, 0x30FF}, {0xAC00, 0xD7AF},
	}
	type tc struct {
		name, in string
		want     bool
	}
	tests := []tc{
		{"empty", "", false},
		{"ASCII", "hello world", false},
		{"accents", "café", false},
		{"Cyrillic", "привет", false},
		{"ideographs in ASCII", "deploy 大别山 now", true},
		{"hiragana", "ひらがな", true},
		{"katakana", "カタカナ", true},
		{"hangul", "한국어", true},
		{"ideographic comma", "a、b", true},
		{"Yijing hexagram just past the extension A block", "\u4DC0", false},
		{"before CJK symbols", "\u2FFF", false},
		{"after hangul syllables", "\uD7B0", false},
		{"after extension B", "\U0002A6E0", false},
		{"fullwidth Latin", "ＡＢＣ", false},
	}
	for _, rg := range ranges {
		for _, r := range []rune{rg[0], rg[1]} {
			tests = append(tests, tc{fmt.Sprintf("U+%04X", r), "x" + string(r), true})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContainsCJK(tc.in); got != tc.want {
				t.Errorf("ContainsCJK(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestErrorCodes(t *testing.T) {
	cause := fs.ErrNotExist
	tests := []struct {
		name     string
		err      error
		code     string
		msg      string
		hasCause bool // errors.Is(err, cause)
		plain    bool // no *Error in the chain
	}{
		{"nil", nil, "", "", false, true},
		{"plain error is internal", errors.New("boom"), EINTERNAL, "boom", false, true},
		{"Errorf", Errorf(EINVALID, "bad %s", "title"), EINVALID, "bad title", false, false},
		{"Errorf wraps %w", Errorf(ENOTFOUND, "open: %w", cause), ENOTFOUND, "open: " + cause.Error(), true, false},
		{"Wrap nil is nil", Wrap(EBUSY, nil, "ctx"), "", "", false, true},
		{"Wrap classifies a plain error", Wrap(EBUSY, cause, "write %d", 3), EBUSY, "write 3: " + cause.Error(), true, false},
		{"Wrap without a code is internal", Wrap("", cause, "ctx"), EINTERNAL, "ctx: " + cause.Error(), true, false},
		{"Wrap keeps an existing code", Wrap(EINTERNAL, Errorf(ECONFLICT, "taken"), "set"), ECONFLICT, "set: taken", false, false},
		{"Wrap keeps it without a new code", Wrap("", Errorf(EINVALID, "bad"), "set"), EINVALID, "set: bad", false, false},
		{"Wrap refines internal", Wrap(EBUSY, Errorf(EINTERNAL, "lock"), "write"), EBUSY, "write: lock", false, false},
		{"code survives fmt.Errorf %w", fmt.Errorf("outer: %w", Errorf(ENOTFOUND, "no session")), ENOTFOUND, "outer: no session", false, false},
		{"code survives two layers", fmt.Errorf("a: %w", fmt.Errorf("b: %w", Wrap(EBUSY, cause, "c"))), EBUSY, "a: b: c: " + cause.Error(), true, false},
		{"Wrap of a wrapped coded error", Wrap(EINTERNAL, fmt.Errorf("x: %w", Errorf(ECONFLICT, "y")), "z"), ECONFLICT, "z: x: y", false, false},
		{"bare Error shows its code", &Error{Code: EBUSY}, EBUSY, "busy", false, false},
		{"Error without message shows its cause", &Error{Code: EINVALID, Err: cause}, EINVALID, cause.Error(), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ErrorCode(tc.err); got != tc.code {
				t.Errorf("ErrorCode = %q, want %q", got, tc.code)
			}
			if tc.err == nil {
				return
			}
			if got := tc.err.Error(); got != tc.msg {
				t.Errorf("Error() = %q, want %q", got, tc.msg)
			}
			if got := errors.Is(tc.err, cause); got != tc.hasCause {
				t.Errorf("errors.Is(err, cause) = %v, want %v", got, tc.hasCause)
			}
			var e *Error
			if got := errors.As(tc.err, &e); got == tc.plain {
				t.Errorf("errors.As(err, *Error) = %v, want %v", got, !tc.plain)
			}
		})
	}
}

var tooLong = regexp.MustCompile(`^Title too long \((\d+) chars, max 100\)$`)

func FuzzSanitizeTitle(f *testing.F) {
	for _, s := range []string{
		"", "  a\t\nb\u200b c  ", "hello\x00world", "\x00\x01\u200b\ufeff", "ship it 🚀", "a\ufffdb", "a\xffb",
		strings.Repeat("é", 100), strings.Repeat("é", 101), strings.Repeat("a \u200b", 60), "my project #2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := SanitizeTitle(s)
		if err != nil {
			if ErrorCode(err) != EINVALID {
				t.Fatalf("SanitizeTitle(%q): code %q, want %q", s, ErrorCode(err), EINVALID)
			}
			m := tooLong.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("SanitizeTitle(%q): unexpected message %q", s, err.Error())
			}
			if n, _ := strconv.Atoi(m[1]); n <= MaxTitleLength {
				t.Fatalf("SanitizeTitle(%q): rejected %d code points", s, n)
			}
			return
		}
		if n := utf8.RuneCountInString(got); n > MaxTitleLength {
			t.Fatalf("SanitizeTitle(%q) = %d code points", s, n)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("SanitizeTitle(%q) = %q: invalid UTF-8", s, got)
		}
		again, err := SanitizeTitle(got)
		if err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", s, got, again, err)
		}
		prevSpace := true // no leading space
		for _, r := range got {
			if isDeletedByTitle(r) {
				t.Fatalf("SanitizeTitle(%q) = %q keeps U+%04X", s, got, r)
			}
			if unicode.IsSpace(r) && (r != ' ' || prevSpace) {
				t.Fatalf("SanitizeTitle(%q) = %q: white space not collapsed", s, got)
			}
			prevSpace = unicode.IsSpace(r)
		}
		if prevSpace && got != "" {
			t.Fatalf("SanitizeTitle(%q) = %q: trailing space", s, got)
		}
	})
}

// TestCarriedCode holds what every backend's classification decides before
// its driver's codes: a code already carried wins (even over a context
// error inside it), an ended context is busy, and anything else is left to
// the backend ("").
func TestCarriedCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain error", errors.New("disk I/O error"), ""},
		{"coded", fmt.Errorf("outer: %w", Errorf(ECONFLICT, "taken")), ECONFLICT},
		{"coded around a cancellation", Wrap(EINVALID, context.Canceled, "bad"), EINVALID},
		{"cancelled", fmt.Errorf("query: %w", context.Canceled), EBUSY},
		{"deadline", context.DeadlineExceeded, EBUSY},
	}
	for _, tc := range tests {
		if got := CarriedCode(tc.err); got != tc.want {
			t.Errorf("%s: CarriedCode = %q, want %q", tc.name, got, tc.want)
		}
	}
}
