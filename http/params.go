package http

import (
	"net/url"
	"strconv"
	"time"

	"github.com/sessiondb/sessiondb"
)

// params reads a request's query parameters, keeping the first error
// (invalid, naming the parameter) so a handler checks once.
type params struct {
	v   url.Values
	err error
}

func paramsOf(v url.Values) *params { return &params{v: v} }

func (p *params) fail(name, format string, args ...any) {
	if p.err == nil {
		p.err = sessiondb.Errorf(sessiondb.EINVALID, "parameter %s: "+format, append([]any{name}, args...)...)
	}
}

func (p *params) str(name string) string { return p.v.Get(name) }

// int reads a whole number in [lo, hi]; def when absent.
func (p *params) int(name string, def, lo, hi int) int {
	s := p.v.Get(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		p.fail(name, "%q is not a whole number from %d to %d", s, lo, hi)
		return def
	}
	return n
}

// int64 reads a non-negative id; 0 when absent.
func (p *params) id(name string) int64 {
	s := p.v.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		p.fail(name, "%q is not a message id", s)
		return 0
	}
	return n
}

// bool reads true/false/1/0; false when absent.
func (p *params) bool(name string) bool {
	s := p.v.Get(name)
	if s == "" {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		p.fail(name, "%q is not true or false", s)
	}
	return b
}

// time reads a point in time as epoch seconds: a number, an RFC 3339 time
// or a date (YYYY-MM-DD, UTC midnight); 0 when absent.
func (p *params) time(name string) float64 {
	s := p.v.Get(name)
	if s == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 {
		return f
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return sessiondb.EpochSeconds(t)
		}
	}
	p.fail(name, "%q is not a time (epoch seconds, RFC 3339 or YYYY-MM-DD)", s)
	return 0
}

// list reads a parameter given several times or comma-separated.
func (p *params) list(name string) []string {
	var out []string
	for _, v := range p.v[name] {
		for _, x := range splitComma(v) {
			if x != "" {
				out = append(out, x)
			}
		}
	}
	return out
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
