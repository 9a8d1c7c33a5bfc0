package history

import (
	"math"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

// highlight turns the >>>match<<< markers of a search snippet into bold on
// a terminal and into [match] elsewhere, so piped output stays plain text.
func highlight(snippet string, tty bool) string {
	open, close := "[", "]"
	if tty {
		open, close = cli.Bold, cli.Reset
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

// fmtCost formats dollars as every face does (sessiondb.FormatUSD).
func fmtCost(usd float64) string { return sessiondb.FormatUSD(usd) }

// sessionCost is what a session cost by sessiondb.CostRule.
func sessionCost(s *sessiondb.Session) float64 {
	usd, _ := sessiondb.SessionCost(s)
	return usd
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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
