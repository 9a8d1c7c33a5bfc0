package uitest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// TestBrowserHermes21Transcript opens sessions of the fixture Hermes wrote
// as a person would and reads what the newer columns show: the observed
// group messages wear a visible "observed" badge (the message the agent
// was asked in does not), the model switch is a divider between the
// turns, the session's models are a table in the header, and the
// provider's reasoning_content starts folded and unfolds to its text;
// one planted hostile stays text.
func TestBrowserHermes21Transcript(t *testing.T) {
	plant := func(path string) {
		sqlitetest.ExecFile(t, path, "UPDATE messages SET reasoning_content = ? WHERE id = 50", hostileReason)
	}
	s, p := visit(t, siteOptions{hermes21: true, plant: plant}, "/s/h21-telegram")
	badges := `[...document.querySelectorAll("#transcript article")].map(a => a.id + ":" + [...a.querySelectorAll(".badge.observed")].filter(b => b.checkVisibility()).map(b => b.textContent).join())`
	if got := eval[[]string](p, badges); len(got) != 4 || got[0] != "m71:observed" || got[1] != "m72:observed" || got[2] != "m73:" || got[3] != "m74:" {
		t.Errorf("observed badges by message: %q", got)
	}
	p.shot("transcript-observed")

	p.open(s.url + "/s/h21-model-switch")
	sw := `document.querySelector("#transcript .model-switch")`
	if got := eval[string](p, sw+`.textContent`); !strings.HasPrefix(got, "model anthropic/claude-sonnet-4 → gpt-5-codex first call ") {
		t.Errorf("switch line %q", got)
	}
	// The divider is seen between the turn of the old model and the turn
	// the new one answered.
	order := `(() => { const d = ` + sw + `, a = document.getElementById("m50"), b = document.getElementById("m51");
		return d.checkVisibility() && a.getBoundingClientRect().bottom <= d.getBoundingClientRect().top && d.getBoundingClientRect().bottom <= b.getBoundingClientRect().top })()`
	if !eval[bool](p, order) {
		t.Error("the model switch is not shown between messages 50 and 51")
	}
	if rows := p.texts("#session-models tbody tr td:first-child"); len(rows) != 2 || rows[0] != "anthropic/claude-sonnet-4" || rows[1] != "gpt-5-codex" {
		t.Errorf("models table %q", rows)
	}
	rc := `document.querySelector("#m52 details.reasoning-content")`
	if eval[bool](p, rc+`.open`) || eval[bool](p, rc+`.querySelector("pre.body").checkVisibility()`) {
		t.Error("the provider's reasoning starts unfolded")
	}
	p.do(chromedp.Click(chromedp.CSS(`#m52 details.reasoning-content > summary`)))
	p.waitFor(rc + `.open`)
	if got := p.text(`#m52 details.reasoning-content pre.body`); got != "Clone is cheapest here (provider-native)." {
		t.Errorf("provider reasoning shows %q", got)
	}
	p.shot("transcript-hermes21")
	// The hostile reasoning planted on message 50, unfolded, is text.
	p.do(chromedp.Click(chromedp.CSS(`#m50 details.reasoning-content > summary`)))
	p.waitFor(`document.querySelector("#m50 details.reasoning-content").open`)
	if got := p.text(`#m50 details.reasoning-content pre.body`); got != hostileReason {
		t.Errorf("hostile provider reasoning shows %q, want %q", got, hostileReason)
	}
	if ran := eval[string](p, `typeof window.pwned`); ran != "undefined" {
		t.Errorf("a payload ran (window.pwned is %s)", ran)
	}
	if n := eval[int](p, `document.querySelectorAll("main iframe").length`); n != 0 {
		t.Errorf("%d iframes came out of the reasoning", n)
	}

	// On a phone the models table and the divider fit the screen.
	p.phone()
	p.open(s.url + "/s/h21-model-switch")
	p.shotScreen("phone-transcript-hermes21")
	if w := eval[int](p, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the transcript is %d px wide on a 390 px screen", w)
	}
}
