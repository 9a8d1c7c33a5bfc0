// Package errtext shapes text that came from outside (ids, URLs, a
// command line, its stderr, a receiver's answer) for use inside an error
// message or a log line, keeping what may be secret out of both.
package errtext

// Clip returns s cut to at most n bytes, marked with "…" when cut, so one
// long value cannot swamp the message it is quoted in.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
