package uitest

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserHostileText opens every page that shows the hostile session
// and checks that its texts render as text: no payload ran (each would set
// window.pwned), no element or link came out of them, and the texts read
// literally, terminal escapes shown as escapes.
func TestBrowserHostileText(t *testing.T) {
	s := newSite(t, siteOptions{mailboxes: true})
	p := newPage(t)
	sess := "/s/" + url.PathEscape(hostileID)
	for _, path := range []string{
		"/", "/?source=" + url.QueryEscape(hostileSource), sess, sess + "/lineage",
		"/search?q=pwned", "/analytics?days=0", "/analytics?days=0&source=" + url.QueryEscape(hostileSource),
		"/mailboxes", "/mailboxes/ag-main/sess-failing",
	} {
		p.open(s.url + path)
		if ran := eval[string](p, `typeof window.pwned`); ran != "undefined" {
			t.Errorf("%s: a payload ran (window.pwned is %s)", path, ran)
		}
		if n := eval[int](p, `document.querySelectorAll("main img, main script, main iframe, main b, a[href^='javascript:' i], [onerror], [onload], [onmouseover]").length`); n != 0 {
			t.Errorf("%s: %d elements or attributes came out of stored text", path, n)
		}
	}

	// A mailbox row's text, unfolded.
	p.click(`#outbound tr[data-row="out-hostile"] details > summary`)
	if got := p.text(`#outbound tr[data-row="out-hostile"] details > summary`); got != hostileOutbound {
		t.Errorf("hostile outbound row shows %q", got)
	}
	if ran := eval[string](p, `typeof window.pwned`); ran != "undefined" {
		t.Errorf("a mailbox payload ran once unfolded (window.pwned is %s)", ran)
	}

	p.open(s.url + sess)
	if h := p.text("#session-title"); h != hostileTitle {
		t.Errorf("title shows %q, want %q", h, hostileTitle)
	}
	if title := eval[string](p, `document.title`); !strings.HasPrefix(title, hostileTitle) {
		t.Errorf("document title %q", title)
	}
	p.do(chromedp.Click(chromedp.CSS(`details.call > summary`)), chromedp.Click(chromedp.CSS(`details.reasoning > summary`)))
	p.waitFor(`document.querySelector("details.call").open && document.querySelector("details.reasoning").open`)
	p.shot("hostile")
	// The hostile user and assistant texts went through the Markdown
	// renderer (the checks above then cover its output).
	if n := eval[int](p, `document.querySelectorAll("#transcript .text.md").length`); n == 0 {
		t.Errorf("no message text rendered as Markdown")
	}
	checks := []struct{ sel, want string }{
		{"#transcript > article:first-child pre.body", hostileUser},
		{"details.call > summary .tool-name", hostileName},
		{"details.call .call-body pre.body", "{\n  \"cmd\": \"</script><script>pwned=10</script>\"\n}"},
		// The terminal's escapes and the right-to-left override show as
		// escapes; the markup as its characters.
		{"details.call .call-result pre.body", `\x1b]0;PWNED\x07\x1b[2J</pre></details><script>pwned=7</script><img src=x onerror=pwned=8> javascript:pwned=9 \u202eevil`},
		{"details.reasoning pre.body", hostileReason},
		// Multimodal content reads through ContentText: the text part,
		// and the images named (a script URL not even that), never loaded.
		{"#transcript > article:last-child pre.body", "look: <img src=x onerror=pwned=13>\n[image]\n[image: https://images.example.com/cat.png]"},
	}
	for _, c := range checks {
		if got := eval[string](p, `document.querySelector(`+jsString(c.sel)+`).textContent`); got != c.want {
			t.Errorf("%s shows\n%q\nwant\n%q", c.sel, got, c.want)
		}
	}
	if ran := eval[string](p, `typeof window.pwned`); ran != "undefined" {
		t.Errorf("a payload ran once unfolded (window.pwned is %s)", ran)
	}
}
