package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
)

// ANSI styles, used only when the output is a terminal.
const (
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

// styled reports whether stdout gets ANSI styles: only a terminal does, and
// not when the user asked for none with NO_COLOR (https://no-color.org).
func (h *historyCLI) styled() bool {
	return isTerminal(h.stdout) && os.Getenv("NO_COLOR") == ""
}

// style wraps s in an ANSI style when on is set.
func style(on bool, code, s string) string {
	if !on || s == "" {
		return s
	}
	return code + s + ansiReset
}

// highlight turns the >>>match<<< markers of a search snippet into bold on
// a terminal and into [match] elsewhere, so piped output stays plain text.
func highlight(snippet string, tty bool) string {
	open, close := "[", "]"
	if tty {
		open, close = ansiBold, ansiReset
	}
	return strings.NewReplacer(">>>", open, "<<<", close).Replace(snippet)
}

// parseAge reads an age such as 90d, 12h, 2w or a plain number of days and
// returns it in days. flag names the flag for the error message.
func parseAge(flag, s string) (float64, error) {
	bad := func() (float64, error) {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "%s %q: want a positive age such as 90d, 12h, 2w or a plain number of days", flag, s)
	}
	t := strings.TrimSpace(strings.ToLower(s))
	if t == "" {
		return bad()
	}
	unit := 1.0 // days
	switch t[len(t)-1] {
	case 'd':
		t = t[:len(t)-1]
	case 'h':
		unit, t = 1.0/24, t[:len(t)-1]
	case 'w':
		unit, t = 7, t[:len(t)-1]
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return bad()
	}
	return n * unit, nil
}

// fmtTime formats REAL epoch seconds in local time to the minute.
func fmtTime(epoch float64) string {
	if epoch == 0 {
		return "-"
	}
	return sessiondb.FromEpochSeconds(epoch).Local().Format("2006-01-02 15:04")
}

// fmtClock formats epoch seconds as the local time of day, with the date
// only when it differs from day (a transcript repeats no dates).
func fmtClock(epoch float64, day string) string {
	t := sessiondb.FromEpochSeconds(epoch).Local()
	if d := t.Format("2006-01-02"); d != day {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("15:04:05")
}

// fmtCount abbreviates large counts: 950, 3.4k, 12k, 1.2M.
func fmtCount(n int64) string {
	switch a := math.Abs(float64(n)); {
	case a < 1000:
		return strconv.FormatInt(n, 10)
	case a < 10_000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "k"
	case a < 1_000_000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 0, 64) + "k"
	default:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	}
}

// fmtCost formats dollars with enough digits for sub-cent sessions.
func fmtCost(usd float64) string {
	switch {
	case usd == 0:
		return "$0"
	case usd < 0.01:
		return fmt.Sprintf("$%.4f", usd)
	case usd < 100:
		return fmt.Sprintf("$%.3f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}

// sessionCost is what a session cost: the provider's actual figure when
// there is one, else the estimate.
func sessionCost(s *sessiondb.Session) float64 {
	if s.ActualCostUSD != nil {
		return *s.ActualCostUSD
	}
	if s.EstimatedCostUSD != nil {
		return *s.EstimatedCostUSD
	}
	return 0
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// orDash shows an empty cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cut shortens s to n code points, marking the cut with "…", and puts the
// text on one line.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// indent prefixes every non-empty line of s with pre (an empty line stays
// empty rather than trailing spaces).
func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pre + l
		}
	}
	return strings.Join(lines, "\n")
}

// progressLine draws a one-line progress report on stderr while long work runs,
// only when stderr is a terminal: scripts and logs get no carriage returns.
// Updates are drawn at most every 100 ms of the injected clock.
type progressLine struct {
	w     io.Writer
	now   sessiondb.Clock
	label string
	total int64 // 0 when unknown
	unit  string

	mu      sync.Mutex
	last    time.Time
	started time.Time
	drawn   bool
}

// newProgressLine returns a progress line for label on w, or nil (a no-op) when
// w is not a terminal. total is the expected count in unit; 0 if unknown.
func newProgressLine(w io.Writer, now sessiondb.Clock, label string, total int64, unit string) *progressLine {
	if !isTerminal(w) {
		return nil
	}
	return &progressLine{w: w, now: now, label: label, total: total, unit: unit, started: now()}
}

// set reports done units so far.
func (p *progressLine) set(done int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.now()
	if p.drawn && t.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last, p.drawn = t, true
	el := t.Sub(p.started).Round(100 * time.Millisecond)
	if p.total > 0 {
		pct := float64(done) * 100 / float64(p.total)
		fmt.Fprintf(p.w, "\r\x1b[K%s %s %3.0f%% (%d/%d %s, %s)", p.label, bar(pct, 24), pct, done, p.total, p.unit, el)
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s %d %s (%s)", p.label, done, p.unit, el)
}

// done erases the progress line.
func (p *progressLine) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func bar(pct float64, width int) string {
	n := int(pct / 100 * float64(width))
	n = max(0, min(width, n))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// spin runs work with a spinner labelled label on stderr (a terminal only).
func (h *historyCLI) spin(label string, work func() error) error {
	stop := spinner(h.stderr, h.now, label)
	defer stop()
	return work()
}

// spinner shows label and the elapsed time on a terminal w while work of
// unknown length (one transaction) runs; the returned stop erases it.
func spinner(w io.Writer, now sessiondb.Clock, label string) (stop func()) {
	p := newProgressLine(w, now, label, 0, "")
	if p == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(150 * time.Millisecond)
		defer tick.Stop()
		frames := `|/-\`
		for i := 0; ; i++ {
			p.mu.Lock()
			fmt.Fprintf(p.w, "\r\x1b[K%s %c %s", label, frames[i%len(frames)], now().Sub(p.started).Round(100*time.Millisecond))
			p.drawn = true
			p.mu.Unlock()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
		p.done()
	}
}

// table lays out rows in columns two spaces apart. Cells are measured in
// terminal columns, where CJK and other wide characters take two: a title
// like 大别山徒步计划 would push text/tabwriter's columns (which counts
// runes) out of line.
type table struct{ rows [][]string }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], termWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-termWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// termWidth is the number of terminal columns s takes: two for East Asian
// wide and full-width characters and most emoji, none for combining marks.
func termWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		case wideRune(r):
			n += 2
		default:
			n++
		}
	}
	return n
}

func wideRune(r rune) bool {
	switch {
	case r >= 0x1100 && r <= 0x115F, // Hangul Jamo initials
		r >= 0x2E80 && r <= 0xA4CF && r != 0x303F,              // CJK radicals … Yi
		r >= 0xAC00 && r <= 0xD7A3,                             // Hangul syllables
		r >= 0xF900 && r <= 0xFAFF,                             // CJK compatibility ideographs
		r >= 0xFE30 && r <= 0xFE4F,                             // CJK compatibility forms
		r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6, // full-width forms
		r >= 0x1F300 && r <= 0x1F64F, r >= 0x1F900 && r <= 0x1F9FF, // emoji
		r >= 0x20000 && r <= 0x3FFFD: // CJK extensions
		return true
	}
	return false
}
