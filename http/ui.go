package http

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
)

// The web UI: pages rendered on the server with html/template (which
// escapes every value by its context: a hostile title or tool output is
// text, never markup), and a little hand-written JavaScript and CSS served
// from the binary. The Content-Security-Policy (guard.go) allows scripts
// and styles from this origin only: no inline <script>, no style=""
// attribute, no event-handler attributes; give an element an id or a
// data- attribute and bind it from ui/static/*.js.
//
// Layout: ui/templates/layout.html is the frame of every page, each page
// is ui/templates/<name>.html defining "content" (and optionally
// "title"); handlers live in ui_*.go and call s.page.

//go:embed ui/templates/*.html
var templateFS embed.FS

//go:embed ui/static
var staticFS embed.FS

// uiData is what every page's template receives: the page's own data in
// Data, and what the frame needs.
type uiData struct {
	// Page names the page (the nav marks it).
	Page string
	// ReadOnly hides every write control.
	ReadOnly bool
	// Mailboxes, Registry and Subagents say which parts are served.
	Mailboxes, Registry, Subagents bool
	Data                           any
}

// routesUI registers the UI's pages and its static files.
func (s *Server) routesUI() {
	static, _ := fs.Sub(staticFS, "ui/static")
	files := http.FileServerFS(static)
	s.mux.Handle("GET /static/", s.metrics.instrument("/static/", false, http.StripPrefix("/static/", cacheable(files))))
	s.mux.Handle("GET /{$}", s.metrics.instrument("/", false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.page(w, r, "index", nil)
	})))
}

// cacheable lets a browser keep the static files for an hour: they change
// only with the binary.
func cacheable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// templates parses layout.html with one page; pages are parsed apart so
// each can define its own "content".
func templates(name string) (*template.Template, error) {
	return template.New("layout.html").Funcs(template.FuncMap{
		"itoa": func(n int64) string { return strconv.FormatInt(n, 10) },
	}).ParseFS(templateFS, "ui/templates/layout.html", "ui/templates/"+name+".html")
}

// page renders the named page in the frame, buffered so a template error
// becomes a clean 500 instead of half a page.
func (s *Server) page(w http.ResponseWriter, r *http.Request, name string, data any) {
	t, err := templates(name)
	if err == nil {
		var buf bytes.Buffer
		d := uiData{Page: name, ReadOnly: s.cfg.ReadOnly, Mailboxes: s.cfg.Mailboxes != nil,
			Registry: s.cfg.Registry != nil, Subagents: s.cfg.Subagents != nil, Data: data}
		if err = t.Execute(&buf, d); err == nil {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.Write(buf.Bytes())
			return
		}
	}
	s.log.Error("render page", "page", name, "err", err)
	http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
}
