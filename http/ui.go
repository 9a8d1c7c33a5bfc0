package http

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/safetext"
	"github.com/sessiondb/sessiondb/mailbox"
)

// The web UI: pages rendered on the server with html/template (which
// escapes every value by its context: a hostile title or tool output is
// text, never markup), and a little hand-written JavaScript and CSS served
// from the binary. The Content-Security-Policy (guard.go) allows scripts
// and styles from this origin only: no inline <script>, no style=""
// attribute, no event-handler attributes; give an element an id or a
// data- attribute and bind it from ui/static/*.js.
//
// Text from a store goes through the template functions text and line
// (safetext): control characters, terminal escapes and the invisible bidi
// overrides show as visible escapes, as on the command line. No value from
// a store is ever turned into template.HTML: markup the UI adds around
// stored text (search marks, truncation) is built from segments the
// template escapes one by one.
//
// Layout: ui/templates/layout.html is the frame of every page, each page
// is ui/templates/<name>.html defining "content" (and optionally
// "title"); ui/templates/parts.html holds the pieces several pages share
// (a transcript's messages, which the live view also renders alone).
// Handlers live in ui_*.go and call s.page.

//go:embed ui/templates/*.html
var templateFS embed.FS

//go:embed ui/static
var staticFS embed.FS

// uiPages are the pages, each parsed with the frame and the shared parts
// once, when the server is built.
var uiPages = []string{"index", "session", "search", "lineage", "analytics", "mailboxes", "mailbox", "registry", "subagents", "error", "delete", "prune", "requeue"}

// uiState is the web UI's part of a Server.
type uiState struct {
	templates map[string]*template.Template
	// markdown renders message text (markdown.go).
	markdown *markdownRenderer

	// facets are the sources and models the session list offers, read
	// from the usage report at most every facetsTTL: the report groups
	// every session, too much work for each view of a list page on a
	// large store, and sources and models seldom change.
	mu       sync.Mutex
	facetsAt time.Time
	sources  []string
	models   []string
}

// facetsTTL is how long the list's sources and models are reused.
const facetsTTL = time.Minute

// facets returns the sources and models of the store's sessions, in
// alphabetical order, read
// again when older than facetsTTL. A failed read leaves the old ones.
func (s *Server) facets(ctx context.Context) (sources, models []string) {
	u := &s.ui
	u.mu.Lock()
	defer u.mu.Unlock()
	now := s.now()
	if u.facetsAt.IsZero() || now.Sub(u.facetsAt) >= facetsTTL || now.Before(u.facetsAt) {
		if rep, err := s.cfg.History.Usage(ctx, sessiondb.UsageFilter{Top: -1}); err == nil {
			u.sources, u.models = nil, nil
			for _, x := range rep.BySource {
				u.sources = append(u.sources, x.Key)
			}
			for _, x := range rep.ByModel {
				if x.Key != "" {
					u.models = append(u.models, x.Key)
				}
			}
			slices.Sort(u.sources)
			slices.Sort(u.models)
			u.facetsAt = now
		}
	}
	return u.sources, u.models
}

// uiData is what every page's template receives: the page's own data in
// Data, and what the frame needs.
type uiData struct {
	// Page names the page (the nav marks it).
	Page string
	// Search is the text of the search box in the frame.
	Search string
	// ReadOnly hides every write control.
	ReadOnly bool
	// Mailboxes, Registry and Subagents say which parts are served.
	Mailboxes, Registry, Subagents bool
	Data                           any
}

// routesUI registers the UI's pages and its static files.
func (s *Server) routesUI() {
	static, _ := fs.Sub(staticFS, "ui/static")
	files := http.FileServerFS(filesOnly{static})
	s.mux.Handle("GET /static/", s.metrics.instrument("/static/", false, http.StripPrefix("/static/", cacheable(files))))
	s.uiPage("GET /{$}", s.uiSessions)
	s.uiPage("GET /s/{id}", s.uiSession)
	s.uiPage("GET /s/{id}/live", s.uiLive)
	s.uiPage("GET /s/{id}/m/{mid}/text", s.uiMessageText)
	s.uiPage("GET /s/{id}/lineage", s.uiLineage)
	s.uiPage("GET /search", s.uiSearch)
	s.uiPage("GET /analytics", s.uiAnalytics)
	s.routesUIWrites()
	if s.cfg.Mailboxes != nil {
		s.uiPage("GET /mailboxes", s.uiMailboxes)
		s.uiPage("GET /mailboxes/{group}/{session}", s.uiMailbox)
	}
	if s.cfg.Registry != nil {
		s.uiPage("GET /registry", s.uiRegistry)
	}
	if s.cfg.Subagents != nil {
		s.uiPage("GET /subagents", s.uiSubagents)
	}
	// Any other page is the UI's own "not found", not the mux's bare text.
	s.uiPage("/", func(w http.ResponseWriter, r *http.Request) error {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "no page at %s", r.URL.Path)
	})
}

// uiFunc is a page handler: it renders its page, or returns an error that
// the route renders as the error page with the status of its code.
type uiFunc func(w http.ResponseWriter, r *http.Request) error

// uiPage registers a page route, instrumented under its pattern.
func (s *Server) uiPage(pattern string, h uiFunc) {
	s.mux.Handle(pattern, s.metrics.instrument(pattern, false, s.uiHandler(h)))
}

// uiHandler turns a uiFunc into a handler with a write deadline like the
// API's, its error rendered as the error page.
func (s *Server) uiHandler(h uiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(handlerTimeout))
		if err := h(w, r); err != nil {
			s.uiError(w, r, err)
		}
	})
}

// filesOnly opens the files of an fs.FS and no folder, so a file server
// over it answers a folder (/static/) 404 instead of listing what it
// holds.
type filesOnly struct{ fs.FS }

func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := file.Stat(); err != nil || fi.IsDir() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, nil
}

// cacheable lets a browser keep the static files for an hour: they change
// only with the binary.
func cacheable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// parseTemplates parses every page with the frame and the shared parts.
func (s *Server) parseTemplates() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range uiPages {
		t, err := template.New("layout.html").Funcs(s.templateFuncs()).ParseFS(templateFS,
			"ui/templates/layout.html", "ui/templates/parts.html", "ui/templates/writes.html", "ui/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse page %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// templateFuncs are the functions the templates call: stored text made
// safe to show, and figures formatted for people.
func (s *Server) templateFuncs() template.FuncMap {
	return template.FuncMap{
		"text":  safetext.Text,
		"line":  safetext.Line,
		"flow":  flow,
		"deref": func(p *string) string { return deref(p) },
		"itoa":  func(n int64) string { return strconv.FormatInt(n, 10) },
		"num":   func(n any) string { return groupDigits(toInt64(n)) },
		"usd":   usd,
		"when":  when,
		"whenp": func(t *float64) string {
			if t == nil {
				return ""
			}
			return when(*t)
		},
		"iso": func(t float64) string { return sessiondb.FromEpochSeconds(t).UTC().Format(time.RFC3339) },
		"ago": func(t float64) string { return ago(s.now().Sub(sessiondb.FromEpochSeconds(t))) },
		"age": func(t time.Time) string {
			if t.IsZero() {
				return "never"
			}
			return ago(s.now().Sub(t))
		},
		"query":       func(base string, kv ...string) string { return withQuery(base, kv...) },
		"sessionURL":  sessionURL,
		"sessionPath": SessionPath,
		"brief":       brief,
		"roles":       func() []string { return []string{"user", "assistant", "tool", "system"} },
		"inc":         func(n int) int { return n + 1 },
		"plural":      plural,
		"subagentStatuses": func() []string {
			return []string{string(sessiondb.SubagentIdle), string(sessiondb.SubagentRunning), string(sessiondb.SubagentError)}
		},
		"clock": func(t time.Time) string { return t.Local().Format("15:04:05") },
		"stamp": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.Local().Format("2006-01-02 15:04")
		},
		"isotime": func(s string) string {
			if t, err := mailbox.ParseTime(s); err == nil {
				return t.Local().Format("2006-01-02 15:04:05")
			}
			return safetext.Line(s)
		},
		// activity: what is known of a mailbox session's agent (agentActivity).
		"activity": func(x hostd.SessionReport) string { return agentActivity(x, s.now()) },
	}
}

// page renders the named page in the frame, buffered so a template error
// becomes a clean 500 instead of half a page.
func (s *Server) page(w http.ResponseWriter, r *http.Request, name string, data any) {
	s.render(w, r, http.StatusOK, name, data)
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	t := s.ui.templates[name]
	if t == nil {
		s.log.Error("render page: no such page", "page", name)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	d := uiData{Page: name, ReadOnly: s.cfg.ReadOnly, Mailboxes: s.cfg.Mailboxes != nil,
		Registry: s.cfg.Registry != nil, Subagents: s.cfg.Subagents != nil, Data: data}
	if name == "search" {
		d.Search = r.URL.Query().Get("q")
	}
	if err := t.Execute(&buf, d); err != nil {
		s.log.Error("render page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fragment renders one named template of a page alone (no frame): the
// live transcript's new messages.
func (s *Server) fragment(w http.ResponseWriter, page, name string, data any) error {
	var buf bytes.Buffer
	if err := s.ui.templates[page].ExecuteTemplate(&buf, name, data); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "render %s", name)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
	return nil
}

// uiErrorData is the error page's data.
type uiErrorData struct {
	Status  int
	Code    string
	Message string
}

// uiError renders err as the error page, with the HTTP status of its
// code. A request whose client went away gets nothing.
func (s *Server) uiError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	code := sessiondb.ErrorCode(err)
	status := StatusOf(code)
	if status >= 500 {
		s.log.Warn("page failed", "path", r.URL.Path, "code", code, "err", err)
	}
	s.render(w, r, status, "error", uiErrorData{Status: status, Code: code, Message: err.Error()})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func toInt64(n any) int64 {
	switch x := n.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(math.Round(x))
	}
	return 0
}

// groupDigits writes n with thin separators every three digits: 1,234,567.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// usd formats a cost: cents for a dollar or more, four decimals below a
// dollar (one agent turn often costs a fraction of a cent), "" for 0.
func usd(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v >= 1:
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	case v >= 0.0001:
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	return "<$0.0001"
}

// when formats epoch seconds as the server's local time to the minute.
func when(t float64) string {
	if t <= 0 {
		return ""
	}
	return sessiondb.FromEpochSeconds(t).Local().Format("2006-01-02 15:04")
}

// ago says how long ago, in the largest unit that fits.
func ago(d time.Duration) string {
	switch {
	case d < 2*time.Second:
		return "just now"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + " s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days ago"
}

// plural writes a count with its noun: "1 tool", "3 tools".
func plural(n any, noun string) string {
	c := toInt64(n)
	if c == 1 {
		return "1 " + noun
	}
	return groupDigits(c) + " " + noun + "s"
}

// brief is the start of a text on one line (a tool call's arguments in
// its folded summary): runs of white space become one space, and the text
// is cut at 100 characters.
func brief(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 100 {
		s = string([]rune(s)[:100]) + "…"
	}
	return safetext.Line(s)
}

// flow is Line for stored text that runs on inside a paragraph (a search
// snippet, a context line): its line breaks and tabs read as spaces, as the
// browser lays them out anyway, instead of showing as \n and \t; every
// other control character still shows as an escape.
func flow(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return safetext.Line(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, s))
}

// sessionURL is the address of a session's page.
func sessionURL(id string) string { return "/s/" + SessionPath(id) }

// withQuery returns base with the query parameters kv (name, value, ...)
// set; an empty value removes the parameter.
func withQuery(base string, kv ...string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			q.Del(kv[i])
		} else {
			q.Set(kv[i], kv[i+1])
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
