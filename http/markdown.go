package http

import (
	"bytes"
	"html/template"
	"net/url"
	"strings"

	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/yuin/goldmark"
	highlighting "github.com/yuin/goldmark-highlighting/v2"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/sessiondb/sessiondb/internal/safetext"
)

// markdownMax is the longest message text (in bytes) the transcript renders
// as Markdown. Longer texts show as plain, clipped text with "show all":
// rendering is linear but a page of megabyte messages would still be slow
// to send and lay out, and the clip keeps the page light.
const markdownMax = 32 << 10

// Code highlighting is most of the rendering's cost (chroma lexes each
// block: 40-85 ms for a 32 KiB text of ~200 small blocks), so it is bounded
// per message and per page; a block past a bound shows as plain code,
// still in its <pre>. A page renders at most markdownPageMax bytes of
// Markdown: the messages after that show as plain text.
const (
	// highlightBlockMax is the longest code block highlighted.
	highlightBlockMax = 4 << 10
	// highlightBlocksPerMessage is how many blocks of one message are
	// highlighted.
	highlightBlocksPerMessage = 8
	// highlightPageMax is how many bytes of code a page highlights.
	highlightPageMax = 32 << 10
	// markdownPageMax is how many bytes of text a page renders as Markdown.
	markdownPageMax = 256 << 10
)

// mdBudget is what is left of one page's rendering bounds.
type mdBudget struct{ text, code int }

func newMDBudget() *mdBudget { return &mdBudget{text: markdownPageMax, code: highlightPageMax} }

// markdownRenderer turns stored message text into HTML that cannot act:
// raw HTML in the text is shown as text (not passed through, not dropped),
// link targets other than http, https, mailto and in-page or relative ones
// are removed, images become links (the page loads no outside image), and
// fenced code is highlighted with CSS classes (app.css colours them; the
// Content-Security-Policy allows no inline style).
type markdownRenderer struct {
	md goldmark.Markdown
	// budget holds a render's *mdBudget in the parser's context.
	budget parser.ContextKey
}

func newMarkdownRenderer() *markdownRenderer {
	budget := parser.NewContextKey()
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM,
			highlighting.NewHighlighting(highlighting.WithFormatOptions(chromahtml.WithClasses(true)))),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(safeLinks{}, 100), util.Prioritized(codeBudget{budget}, 100))),
		goldmark.WithRendererOptions(html.WithHardWraps(),
			renderer.WithNodeRenderers(util.Prioritized(rawAsText{}, 100))),
	)
	return &markdownRenderer{md: md, budget: budget}
}

// render returns s as HTML, or "" when s is too long to render, the
// page's budget has no room for it, or it does not render (the caller
// then shows it as plain text). It takes what it uses from budget.
func (m *markdownRenderer) render(s string, budget *mdBudget) template.HTML {
	if len(s) > markdownMax || len(s) > budget.text || strings.TrimSpace(s) == "" {
		return ""
	}
	budget.text -= len(s)
	pc := parser.NewContext()
	pc.Set(m.budget, budget)
	var b bytes.Buffer
	if err := m.md.Convert([]byte(safetext.Text(s)), &b, parser.WithContext(pc)); err != nil {
		return ""
	}
	return template.HTML(b.String()) // #nosec: goldmark output with raw HTML escaped and link targets checked
}

// safeURL reports whether a link target may stay: a scheme the browser
// navigates to without running anything, or no scheme at all.
func safeURL(dest []byte) bool {
	u, err := url.Parse(strings.TrimSpace(string(dest)))
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "", "http", "https", "mailto":
		return true
	}
	return false
}

// safeLinks checks every link target.
type safeLinks struct{}

func (safeLinks) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			if !safeURL(n.Destination) {
				n.Destination = nil
			}
			n.SetAttributeString("rel", []byte("nofollow noreferrer"))
		case *ast.AutoLink:
			if !safeURL(n.URL(src)) {
				// An autolink's target is its text: show the text only.
				t := ast.NewString(n.Label(src))
				n.Parent().ReplaceChild(n.Parent(), n, t)
				return ast.WalkSkipChildren, nil
			}
			n.SetAttributeString("rel", []byte("nofollow noreferrer"))
		}
		return ast.WalkContinue, nil
	})
}

// codeBudget marks the fenced code blocks past the highlighting bounds
// "nohl" (goldmark-highlighting then writes them plain) and takes the
// highlighted ones' bytes from the page's budget.
type codeBudget struct{ key parser.ContextKey }

func (c codeBudget) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	budget, _ := pc.Get(c.key).(*mdBudget)
	if budget == nil {
		return
	}
	blocks := 0
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		code, ok := n.(*ast.FencedCodeBlock)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		size := 0
		for i := 0; i < code.Lines().Len(); i++ {
			seg := code.Lines().At(i)
			size += seg.Len()
		}
		blocks++
		if blocks > highlightBlocksPerMessage || size > highlightBlockMax || size > budget.code {
			code.SetAttributeString("nohl", true)
		} else {
			budget.code -= size
		}
		return ast.WalkSkipChildren, nil
	})
}

// rawAsText renders raw HTML (inline and block) as the text it is.
type rawAsText struct{}

func (rawAsText) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	// An image shows as a link to it: the page loads no outside image.
	reg.Register(ast.KindImage, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		img := n.(*ast.Image)
		if entering {
			_, _ = w.WriteString("<a rel=\"nofollow noreferrer\" href=\"")
			if safeURL(img.Destination) {
				_, _ = w.WriteString(template.HTMLEscapeString(string(util.URLEscape(img.Destination, true))))
			}
			_, _ = w.WriteString("\">")
			return ast.WalkContinue, nil
		}
		_, _ = w.WriteString("</a>")
		return ast.WalkContinue, nil
	})
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := 0; i < segs.Len(); i++ {
				s := segs.At(i)
				_, _ = w.WriteString(template.HTMLEscapeString(string(s.Value(src))))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		b := n.(*ast.HTMLBlock)
		_, _ = w.WriteString("<pre class=\"raw-html\">")
		for i := 0; i < b.Lines().Len(); i++ {
			l := b.Lines().At(i)
			_, _ = w.WriteString(template.HTMLEscapeString(string(l.Value(src))))
		}
		if b.HasClosure() {
			_, _ = w.WriteString(template.HTMLEscapeString(string(b.ClosureLine.Value(src))))
		}
		_, _ = w.WriteString("</pre>\n")
		return ast.WalkSkipChildren, nil
	})
}
