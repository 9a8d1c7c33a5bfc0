package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// inOrder fails unless each of parts is found in body after the one
// before it.
func inOrder(t *testing.T, what, body string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(body[at:], p)
		if i < 0 {
			t.Errorf("%s: %q missing after %q", what, p, body[:at][max(0, at-80):])
			return
		}
		at += i + len(p)
	}
}

// The transcript of the fixture Hermes wrote shows the newer columns to a
// person: observed group messages carry a badge (the message the agent
// was asked in does not), the platform's message ids show, the provider's
// reasoning_content is a folded part of its own whose whole text is read
// at part=reasoning_content, and a session that switched models has a
// table of its models in order of first use and a divider before the turn
// the new model answered; the live fragment shows the divider too.
func TestTranscriptShowsNewerColumns(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.serve(sdbhttp.Config{History: hermes21Store(t)})

	tg := f.page("/s/h21-telegram", http.StatusOK)
	if n := strings.Count(tg, `<span class="badge observed"`); n != 2 {
		t.Errorf("%d observed badges on h21-telegram, want 2", n)
	}
	inOrder(t, "h21-telegram", tg, `id="m71"`, `badge observed`, `tg-1001`, `id="m72"`, `badge observed`, `id="m73"`)
	if m73 := tg[strings.Index(tg, `id="m73"`):strings.Index(tg, `id="m74"`)]; strings.Contains(m73, "observed") || !strings.Contains(m73, "tg-1003") {
		t.Errorf("the message the agent was asked in is marked wrong:\n%s", m73)
	}
	if strings.Contains(tg, `class="model-switch"`) || strings.Contains(tg, `id="session-models"`) {
		t.Error("a one-model session shows a model switch")
	}

	ms := f.page("/s/h21-model-switch", http.StatusOK)
	inOrder(t, "h21-model-switch", ms, `id="session-models"`, `<code>anthropic/claude-sonnet-4</code></td><td class="provider">anthropic</td><td class="num">2</td><td class="num">6,400</td>`,
		`<code>gpt-5-codex</code></td><td class="provider">openai-codex</td><td class="num">2</td><td class="num">8,600</td>`, `</table>`,
		`id="m50"`, `<p class="model-switch" role="separator" data-model="gpt-5-codex">model <code>anthropic/claude-sonnet-4</code> → <code>gpt-5-codex</code>`,
		`id="m51"`, `id="m52"`, `<summary>Reasoning</summary>`, `Clone is cheapest here.`,
		`<summary>Provider reasoning</summary>`, `Clone is cheapest here (provider-native).`)
	if n := strings.Count(ms, `class="model-switch"`); n != 1 {
		t.Errorf("%d model switches on h21-model-switch, want 1", n)
	}
	if n := strings.Count(ms, `Provider reasoning`); n != 1 {
		t.Errorf("%d provider reasoning parts, want 1 (message 50 has none)", n)
	}
	if got := string(f.get("/s/h21-model-switch/m/52/text?part=reasoning_content").body); got != "Clone is cheapest here (provider-native)." {
		t.Errorf("part=reasoning_content answered %q", got)
	}
	live := string(f.get("/s/h21-model-switch/live?after=50").body)
	inOrder(t, "live fragment", live, `class="model-switch"`, `id="m51"`)
}

// read_session gives an agent the same marks: observed, the provider's
// reasoning_content, the platform's ids, and the model switch on the
// message it comes before, with the models' usage.
func TestMCPReadSessionNewerColumns(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.serve(sdbhttp.Config{History: hermes21Store(t)})
	cs := f.mcpSession()
	var tg sdbhttp.ReadOutput
	mcpCall(t, cs, "read_session", map[string]any{"session_id": "h21-telegram"}, &tg)
	var observed []bool
	var ids []string
	for _, m := range tg.Messages {
		observed = append(observed, m.Observed)
		ids = append(ids, m.PlatformMessageID)
	}
	if want := "[true true false false] [tg-1001 tg-1002 tg-1003 ]"; fmt.Sprint(observed, " ", ids) != want {
		t.Errorf("observed, platform ids = %v %v; want %s", observed, ids, want)
	}
	if tg.Models != nil {
		t.Errorf("a one-model session lists models %+v", tg.Models)
	}
	var ms sdbhttp.ReadOutput
	mcpCall(t, cs, "read_session", map[string]any{"session_id": "h21-model-switch"}, &ms)
	if len(ms.Models) != 2 || ms.Models[0].Model != "anthropic/claude-sonnet-4" || ms.Models[1].Model != "gpt-5-codex" || ms.Models[1].InputTokens != 8600 {
		t.Errorf("models = %+v", ms.Models)
	}
	for _, m := range ms.Messages {
		switch {
		case m.ID == 51 && (m.ModelSwitch == nil || m.ModelSwitch.From != "anthropic/claude-sonnet-4" || m.ModelSwitch.To != "gpt-5-codex"):
			t.Errorf("message 51's switch = %+v", m.ModelSwitch)
		case m.ID != 51 && m.ModelSwitch != nil:
			t.Errorf("message %d has a switch %+v", m.ID, m.ModelSwitch)
		case m.ID == 52 && m.ReasoningContent != "Clone is cheapest here (provider-native).":
			t.Errorf("message 52's reasoning_content = %q", m.ReasoningContent)
		case m.ID == 50 && m.ReasoningContent != "":
			t.Errorf("message 50 has reasoning_content %q", m.ReasoningContent)
		}
	}
}

// Hostile text in the newer columns (reasoning_content, a platform id, a
// usage row's model) is inert on the transcript page.
func TestTranscriptNewerColumnsEscaped(t *testing.T) {
	p := hermes21Copy(t)
	const hostile = "<img src=x onerror=alert(7)>\x1b[2J\u202e"
	sqlitetest.ExecFile(t, p, "UPDATE messages SET reasoning_content = ? WHERE id = 52", "rc "+hostile)
	sqlitetest.ExecFile(t, p, "UPDATE messages SET platform_message_id = ? WHERE id = 51", "pid "+hostile)
	sqlitetest.ExecFile(t, p, "UPDATE session_model_usage SET model = ? WHERE session_id = 'h21-model-switch' AND model = 'gpt-5-codex'", "gpt "+hostile)
	st, err := sqlite.Open(ctxb, p, sqlite.Options{})
	f := newFixture(t, sdbhttp.Config{})
	f.serve(sdbhttp.Config{History: testkit.Opened(t, st, err)})
	body := f.page("/s/h21-model-switch", http.StatusOK)
	for _, raw := range []string{"<img src=x", "\x1b", "\u202e"} {
		if strings.Contains(body, raw) {
			t.Errorf("the transcript holds %q unescaped", raw)
		}
	}
	const shown = `&lt;img src=x onerror=alert(7)&gt;\x1b[2J\u202e`
	for _, want := range []string{"rc " + shown, "pid " + shown, "<code>gpt " + shown + "</code>"} {
		if n := strings.Count(body, want); n == 0 || strings.HasPrefix(want, "<code>") && n != 2 {
			t.Errorf("the transcript shows %q %d times", want, n)
		}
	}
}

// A switch after the last message shows after it once the session has
// ended; while it is live, the switch comes with the next message (the
// live fragment), not twice.
func TestTranscriptSwitchAfterLastMessage(t *testing.T) {
	p := hermes21Copy(t)
	q := "UPDATE session_model_usage SET first_seen = ?, last_seen = ? WHERE session_id = 'h21-model-switch' AND model = ?"
	sqlitetest.ExecFile(t, p, q, 1767744004.0, 1767744050.0, "anthropic/claude-sonnet-4")
	sqlitetest.ExecFile(t, p, q, 1767744100.0, 1767744110.0, "gpt-5-codex")
	st, err := sqlite.Open(ctxb, p, sqlite.Options{})
	st = testkit.Opened(t, st, err)
	f := newFixture(t, sdbhttp.Config{})
	f.serve(sdbhttp.Config{History: st})
	ended := f.page("/s/h21-model-switch", http.StatusOK)
	inOrder(t, "ended", ended, `id="m52"`, `</section>`, `class="model-switch"`)
	if err := st.ReopenSession(ctxb, "h21-model-switch"); err != nil {
		t.Fatal(err)
	}
	if live := f.page("/s/h21-model-switch", http.StatusOK); strings.Contains(live, `class="model-switch"`) {
		t.Error("a live session's page shows a switch no message follows yet")
	}
	id, err := st.AppendMessage(ctxb, sessiondb.NewMessage{SessionID: "h21-model-switch", Role: "user", Content: ptr("and now?")})
	if err != nil {
		t.Fatal(err)
	}
	live := string(f.get("/s/h21-model-switch/live?after=52").body)
	inOrder(t, "live fragment", live, `class="model-switch"`, fmt.Sprintf(`id="m%d"`, id))
}
