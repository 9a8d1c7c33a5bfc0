package errtext

import (
	"net/url"
	"strings"
)

// RedactURL shows where a URL points without what may authenticate the
// request: only the scheme and host (with port) are kept. User info, the
// path, the query and the fragment are all dropped and marked "/…":
// webhook services put their secret in any of them (a password in
// https://user:pass@host, a token in ?token=, a Slack or Telegram bot key
// in the path). A string that is not an absolute URL shows as "(a URL)".
// Logs, status files and error messages name a webhook through this.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(a URL)"
	}
	s := u.Scheme + "://" + u.Host
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawPath != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		s += "/…"
	}
	return s
}

// RedactCommand shows which program a shell command line runs without its
// arguments, which may hold secrets (curl -H 'Authorization: Bearer …'):
// the first word, unless it is an environment assignment (TOKEN=…), then
// "…" for the rest.
func RedactCommand(cmd string) string {
	f := strings.Fields(cmd)
	switch {
	case len(f) == 0:
		return ""
	case strings.Contains(f[0], "="):
		return "…"
	case len(f) == 1:
		return f[0]
	}
	return f[0] + " …"
}
