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

// passwordParams are the URL parameters libpq and pgx read a password from.
var passwordParams = []string{"password", "sslpassword"}

// HasPassword reports whether location, a store's location, is a URL
// that carries a password: in its user info (postgres://user:pw@host) or
// in a password or sslpassword parameter. A URL too broken to read counts
// as carrying one when it has user info with a colon.
func HasPassword(location string) bool {
	_, found := redactPassword(location, false)
	return found
}

// RedactPassword shows a store's location without a password: a file
// path as it is; a URL with the password of its user info and the values
// of its password and sslpassword parameters replaced by "xxxxx", and the
// rest (user, host, database, other parameters) kept, since it names the
// store and is no secret. A URL too broken to read shows as "(a URL)".
// Errors and logs that name a database the user gave go through this.
func RedactPassword(location string) string {
	s, _ := redactPassword(location, false)
	return s
}

// DropPassword is location without its password, for a command line
// printed for the user to run: the user info keeps its user, the password
// and sslpassword parameters are removed, so the client reads the password
// from $PGPASSWORD or ~/.pgpass. Anything else is as RedactPassword shows
// it.
func DropPassword(location string) string {
	s, _ := redactPassword(location, true)
	return s
}

// redactPassword masks the password of location with "xxxxx", or drops it
// when drop is set, and reports whether it held one.
func redactPassword(location string, drop bool) (string, bool) {
	i := strings.Index(location, "://")
	if i < 0 {
		return location, false
	}
	u, err := url.Parse(location)
	if err != nil {
		rest := location[i+3:]
		at := strings.LastIndex(rest, "@")
		return "(a URL)", at >= 0 && strings.Contains(rest[:at], ":")
	}
	found := false
	if pw, ok := u.User.Password(); ok && pw != "" {
		name := u.User.Username()
		u.User = url.UserPassword(name, "xxxxx")
		if drop {
			u.User = url.User(name)
		}
		found = true
	}
	q := u.Query()
	for k := range q {
		for _, p := range passwordParams {
			if strings.EqualFold(k, p) && q.Get(k) != "" {
				q.Set(k, "xxxxx")
				if drop {
					q.Del(k)
				}
				found = true
			}
		}
	}
	if !found {
		return location, false
	}
	u.RawQuery = q.Encode()
	return u.String(), true
}
