// Package uitest drives sessiondb's web UI in a real browser: Debian's
// Chromium, headless, through the DevTools protocol (chromedp). It holds
// only tests: each one serves real SQLite stores (and session mailboxes)
// with the http package, as `sessiondb serve` does, and uses the pages as a
// person would, clicking, typing and reading what the browser shows.
//
// One browser serves the whole package run (a tab per test). Without
// Chromium the tests are skipped, saying why, unless
// SESSIONDB_REQUIRE_CHROMIUM=1 (CI sets it): then they fail.
// SESSIONDB_CHROMIUM names the browser's binary (default: chromium on
// PATH). Each test saves a screenshot of every page it opens, into
// SESSIONDB_SCREENSHOTS when set, else into the test's temporary folder.
package uitest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/sessiondb/sessiondb/internal/browsertest"
)

// The environment the tests read besides browsertest's.
const envShots = "SESSIONDB_SCREENSHOTS"

// browser is the one Chromium of this test binary, started by the first
// test that needs it and stopped by TestMain.
var browser struct {
	once sync.Once
	ctx  context.Context // the browser's chromedp context; tabs derive from it
	stop func()
	err  error
}

func TestMain(m *testing.M) {
	if os.Getenv(envAppender) != "" {
		// This binary was started by a test as the other process that
		// writes to the store (appender_test.go).
		os.Exit(appenderMain())
	}
	code := m.Run()
	if browser.stop != nil {
		browser.stop()
	}
	os.Exit(code)
}

// page is one browser tab of a test, with the console messages it
// collected (CSP refusals and script errors show there).
type page struct {
	t   testing.TB
	ctx context.Context
	mu  sync.Mutex
	log []chromedp.ConsoleMessage
	// expected are console errors the test provokes (a refused write).
	expected []string
}

// expectConsole lets console errors holding text pass (a request the test
// expects the server to refuse shows as one).
func (p *page) expectConsole(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expected = append(p.expected, text)
}

// newPage opens a tab in the shared browser for t, in a browser context
// of its own: a desktop-sized
// viewport, every action bounded by one minute. At the end of the test the
// tab is closed and its console checked: a script error or a refusal by
// the Content-Security-Policy fails the test (the UI must work within its
// own policy).
func newPage(t testing.TB) *page {
	t.Helper()
	browser.once.Do(func() { browser.ctx, browser.stop, browser.err = browsertest.Start() })
	if browser.err != nil {
		browsertest.Unavailable(t, browser.err)
	}
	// Each test's tab has a browser context of its own (its own cookies
	// and cache, as a private window): the token one test signs in with
	// must not open another's writes.
	tabCtx, closeTab := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	// A tab of a new browser context has no window size of its own: the
	// viewport is set, as a laptop's screen.
	if err := chromedp.Do(tabCtx, chromedp.EmulateViewport(1280, 900)); err != nil {
		closeTab()
		t.Fatalf("open a tab: %v", err)
	}
	ctx, cancel := context.WithTimeout(tabCtx, time.Minute)
	p := &page{t: t, ctx: ctx}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.log = append(p.log, m)
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		closeTab()
		p.mu.Lock()
		defer p.mu.Unlock()
	next:
		for _, m := range p.log {
			for _, e := range p.expected {
				if strings.Contains(m.Text, e) {
					continue next
				}
			}
			if m.Type == chromedp.ConsoleError || m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				t.Errorf("browser console %s: %s (%s)", m.Type, m.Text, m.URL)
			}
		}
	})
	return p
}

// do runs actions in the tab, failing the test on an error.
func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.t.Fatal(err)
	}
}

// open navigates to url and waits for the page's body.
func (p *page) open(url string) {
	p.t.Helper()
	p.do(chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
}

// text returns the visible text of the first element sel matches, once
// there is one. It is read in one evaluation, so a page region that
// refreshes itself (the mailboxes) cannot swap the element between finding
// and reading it.
func (p *page) text(sel string) string {
	p.t.Helper()
	p.waitFor(`document.querySelector(` + jsString(sel) + `) !== null`)
	return eval[string](p, `(document.querySelector(`+jsString(sel)+`) || {innerText: ""}).innerText`)
}

// click clicks the first element sel matches, once there is one. The
// element is found and clicked in one evaluation, so a page region that
// refreshes itself (the mailboxes) cannot swap it out between the two, as
// it can between chromedp's lookup of a node and its mouse events.
func (p *page) click(sel string) {
	p.t.Helper()
	p.waitFor(`document.querySelector(` + jsString(sel) + `) !== null`)
	if !eval[bool](p, `(() => { const e = document.querySelector(`+jsString(sel)+`); if (!e) return false; e.click(); return true })()`) {
		p.t.Fatalf("click: nothing matches %s", sel)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// texts returns the visible text of every element sel matches.
func (p *page) texts(sel string) []string {
	p.t.Helper()
	return eval[[]string](p, `Array.from(document.querySelectorAll(`+jsString(sel)+`), e => e.innerText)`)
}

// waitFor waits until the JavaScript predicate is true (checked at each
// animation frame, as the page changes). A navigation under way destroys
// the page's JavaScript context; the wait then starts again in the next
// page.
func (p *page) waitFor(predicate string) {
	p.t.Helper()
	for {
		_, err := chromedp.Run(p.ctx, chromedp.Poll[bool](predicate))
		if err == nil {
			return
		}
		if p.ctx.Err() == nil && (strings.Contains(err.Error(), "context with specified id") ||
			strings.Contains(err.Error(), "context was destroyed") || strings.Contains(err.Error(), "target navigated")) {
			continue
		}
		p.t.Fatalf("waiting for %s: %v", predicate, err)
	}
}

// waitLoaded waits, after a click that leads to another page, until the
// predicate holds on the new page and the page has finished loading: the
// new address (or the new body's marker) shows as soon as the browser
// commits the navigation, while the rest of the document may still be
// on its way, and a test reading the rows then would read part of them.
func (p *page) waitLoaded(predicate string) {
	p.t.Helper()
	p.waitFor(`(` + predicate + `) && document.readyState === "complete"`)
}

// shot saves a screenshot of the whole page as name.png.
func (p *page) shot(name string) string {
	p.t.Helper()
	return p.save(name, chromedp.FullScreenshot(100))
}

// shotScreen saves a screenshot of what the screen shows (the top of the
// page) as name.png.
func (p *page) shotScreen(name string) string {
	p.t.Helper()
	return p.save(name, chromedp.CaptureScreenshot())
}

func (p *page) save(name string, capture chromedp.Action[[]byte]) string {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, capture)
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := os.Getenv(envShots)
	if dir == "" {
		dir = p.t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// phone turns the tab into a phone-sized screen (390×844 CSS pixels, as an
// iPhone 12 to 15, touch on).
func (p *page) phone() {
	p.t.Helper()
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), func(m *emulation.SetDeviceMetricsOverrideParams, tch *emulation.SetTouchEmulationEnabledParams) {
		m.Mobile = true
		tch.Enabled = true
	}))
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\u2028", `\u2028`, "\u2029", `\u2029`)
	return `"` + r.Replace(s) + `"`
}
