package history

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// before fails unless a is found in out, and before b.
func before(t *testing.T, out, a, b string) {
	t.Helper()
	i, j := strings.Index(out, a), strings.Index(out, b)
	if i < 0 || j < 0 || i > j {
		t.Errorf("want %q before %q in:\n%s", a, b, out)
	}
}

// TestShowHermes21Marks shows the sessions of the fixture Hermes wrote
// whose newer columns a person must see: the group messages the agent only
// observed are marked so (the message it was asked in is not), the
// provider's reasoning_content is shown beside the reasoning, the platform's
// message ids show, multimodal parts are named, and the model switch of
// h21-model-switch is a line before the turn the new model answered (the
// first user message after the old model's last call), with both models'
// usage in the header, in order of first use; --last keeps the line.
func TestShowHermes21Marks(t *testing.T) {
	db := hermes21File(t, "state.db")

	tg := mustCLI(t, "--db", db, "show", "h21-telegram").Stdout
	for _, want := range []string{
		"#1 (id 71) user (observed)  ", "#2 (id 72) user (observed)  ", "platform id tg-1001", "platform id tg-1003",
	} {
		if !strings.Contains(tg, want) {
			t.Errorf("show h21-telegram lacks %q:\n%s", want, tg)
		}
	}
	if !regexp.MustCompile(`(?m)^#3 \(id 73\) user  \S`).MatchString(tg) {
		t.Errorf("the message the agent was asked in is not an ordinary user turn:\n%s", tg)
	}

	ms := mustCLI(t, "--db", db, "show", "h21-model-switch").Stdout
	divider := "── model anthropic/claude-sonnet-4 → gpt-5-codex (first call "
	before(t, ms, "models, in order of first use:\n    anthropic/claude-sonnet-4 · 2 calls · 6.4k in / 430 out tokens · $0.0257\n    gpt-5-codex · 2 calls · 8.6k in / 360 out tokens · $0\n", "#1 (id 49)")
	before(t, ms, "#2 (id 50) assistant", divider)
	before(t, ms, divider, "#3 (id 51) user")
	if n := strings.Count(ms, "── model "); n != 1 {
		t.Errorf("%d switch lines, want 1:\n%s", n, ms)
	}
	before(t, ms, "│ reasoning: Clone is cheapest here.\n", "│ reasoning (provider): Clone is cheapest here (provider-native).\n")
	if strings.Contains(ms, "reasoning (provider): The closure") {
		t.Errorf("a reasoning_content-less message shows one:\n%s", ms)
	}
	var js struct {
		ModelSwitches []struct {
			Before   int64
			From, To string
		} `json:"model_switches"`
		Models []struct {
			Model       string
			InputTokens int64 `json:"input_tokens"`
		}
	}
	mustCLI(t, "--json", "--db", db, "show", "h21-model-switch").Decode(t, &js)
	if fmt.Sprint(js.ModelSwitches) != "[{51 anthropic/claude-sonnet-4 gpt-5-codex}]" || fmt.Sprint(js.Models) != "[{anthropic/claude-sonnet-4 6400} {gpt-5-codex 8600}]" {
		t.Errorf("--json: model_switches %v, models %v", js.ModelSwitches, js.Models)
	}
	last := mustCLI(t, "--db", db, "show", "h21-model-switch", "--last", "2").Stdout
	before(t, last, divider, "#3 (id 51) user")

	// A session with one model has no switch and no per-model lines.
	one := mustCLI(t, "--db", db, "show", "h21-telegram").Stdout
	if strings.Contains(one, "── model") || strings.Contains(one, "models, in order") {
		t.Errorf("a one-model session shows a switch:\n%s", one)
	}

	mm := mustCLI(t, "--db", db, "show", "h21-multimodal").Stdout
	before(t, mm, "  What bird is in this picture?\n  [image: image/png]\n", "#3 (id 47) user  ")
}

// TestShowNewerColumnsEscaped plants hostile text in the newer columns show
// prints (reasoning_content, platform_message_id, effect_disposition, a
// usage row's model): every one reaches the terminal escaped.
func TestShowNewerColumnsEscaped(t *testing.T) {
	db := hermes21File(t, "state.db")
	sqlitetest.ExecFile(t, db, "UPDATE messages SET reasoning_content = ? WHERE id = 52", "rc "+clitest.Hostile)
	sqlitetest.ExecFile(t, db, "UPDATE messages SET platform_message_id = ? WHERE id = 71", "pid"+clitest.Hostile)
	sqlitetest.ExecFile(t, db, "UPDATE session_model_usage SET model = ? WHERE session_id = 'h21-model-switch' AND model = 'gpt-5-codex'", "gpt"+clitest.Hostile)
	for _, id := range []string{"h21-model-switch", "h21-telegram"} {
		r := runCLI(t, "", "--db", db, "show", id)
		if r.Code != 0 {
			t.Fatalf("show %s: exit %d: %s", id, r.Code, r.Stderr)
		}
		clitest.AssertInert(t, "show "+id, r.Stdout)
		if n := strings.Count(r.Stdout, clitest.Plain); id == "h21-model-switch" && n != 3 || id == "h21-telegram" && n != 1 {
			t.Errorf("show %s shows the planted text escaped %d times:\n%s", id, n, r.Stdout)
		}
	}
}

// The fixture copied to PostgreSQL shows the same transcripts: the usage
// rows PostgreSQL returns place the switch and fill the header alike.
func TestShowHermes21OnPostgres(t *testing.T) {
	url := pgURL(t)
	src := hermes21File(t, "state.db")
	mustCLI(t, "copy", "--from", src, "--to", url)
	for _, id := range []string{"h21-model-switch", "h21-telegram", "h21-multimodal"} {
		onFile := mustCLI(t, "--db", src, "show", id).Stdout
		if got := mustCLI(t, "--db", url, "show", id).Stdout; got != onFile {
			t.Errorf("show %s on PostgreSQL:\n%s\nwant, as on the file:\n%s", id, got, onFile)
		}
	}
}

// Where the usage rows' times put a switch: calls of the two models that
// interleave (a switch and a switch back) put it before the first message
// after the new model's first call; a switch after the last message shows
// after it, saying no message followed.
func TestShowModelSwitchPlacement(t *testing.T) {
	db := hermes21File(t, "state.db")
	q := "UPDATE session_model_usage SET first_seen = ?, last_seen = ? WHERE session_id = 'h21-model-switch' AND model = ?"
	sqlitetest.ExecFile(t, db, q, 1767744004.0, 1767744009.0, "anthropic/claude-sonnet-4")
	sqlitetest.ExecFile(t, db, q, 1767744007.5, 1767744012.0, "gpt-5-codex")
	out := mustCLI(t, "--db", db, "show", "h21-model-switch").Stdout
	before(t, out, "#3 (id 51) user", "── model anthropic/claude-sonnet-4 → gpt-5-codex")
	before(t, out, "── model anthropic/claude-sonnet-4 → gpt-5-codex", "#4 (id 52) assistant")

	sqlitetest.ExecFile(t, db, q, 1767744004.0, 1767744050.0, "anthropic/claude-sonnet-4")
	sqlitetest.ExecFile(t, db, q, 1767744100.0, 1767744110.0, "gpt-5-codex")
	out = mustCLI(t, "--db", db, "show", "h21-model-switch").Stdout
	before(t, out, "Cloned the value before the closure.", "── model anthropic/claude-sonnet-4 → gpt-5-codex")
	if !strings.Contains(out, "; no message since ──") {
		t.Errorf("a switch after the last message does not say so:\n%s", out)
	}
}
