package sessiondb

import (
	"regexp"
	"strings"
	"unicode"
)

// pyWhite is Python's \s and str.isspace() as a character class: Go's \s
// is ASCII only, and unicode.IsSpace lacks U+001C to U+001F.
const pyWhite = `[\t\n\v\f\r \x{1c}-\x{1f}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`

// The three patterns of Hermes' sanitize_context (agent/memory_manager.py):
// a recalled-memory block, the system note that introduces one, a stray
// fence tag.
var (
	memoryBlockRE = regexp.MustCompile(`(?i)<` + pyWhite + `*memory-context` + pyWhite + `*>(?s:.)*?</` + pyWhite + `*memory-context` + pyWhite + `*>`)
	memoryNoteRE  = regexp.MustCompile(`(?i)\[System note:` + pyWhite + `*The following is recalled memory context,` + pyWhite +
		`*NOT new user input\.` + pyWhite + `*Treat as (?:informational background data|authoritative reference data[^\]]*)\.\]` + pyWhite + `*`)
	memoryFenceRE = regexp.MustCompile(`(?i)</?` + pyWhite + `*memory-context` + pyWhite + `*>`)
)

// SanitizeContext removes from text what Hermes' memory layer injects into
// a turn and its replay strips (sanitize_context): <memory-context> blocks,
// the system note announcing recalled memory, stray fence tags.
func SanitizeContext(text string) string {
	// Each pattern holds "memory-context" or "memory context", whose
	// letters have no other case forms than ASCII's.
	if l := strings.ToLower(text); !strings.Contains(l, "memory-context") && !strings.Contains(l, "memory context") {
		return text
	}
	text = memoryBlockRE.ReplaceAllLiteralString(text, "")
	text = memoryNoteRE.ReplaceAllLiteralString(text, "")
	return memoryFenceRE.ReplaceAllLiteralString(text, "")
}

// pyIsSpace is Python's str.isspace() of one code point.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// PyStrip is Python's str.strip(): white space, as Python counts it, cut
// from both ends.
func PyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }
