package history

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

func (h *group) sessionsCmd() *cobra.Command {
	var f sessiondb.RichFilter
	c := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions, newest first",
		Long: `List sessions newest first with their title, source, model, start and last
activity, message and tool-call counts, tokens (input + output), cost (actual
where billed, else estimated) and the first words of the first user message.

The sessions listed are those Hermes' own listing shows: conversations
started fresh and /branch children; a delegate subagent's run is left out
(it shows under its parent in lineage). A compression chain (a session
ended with end_reason=compression and its continuations) shows as one row,
its title marked [chain of N]: the newest continuation's id, title and
preview, the root's start, the newest's last activity, and the whole chain's
totals for messages, tools, tokens and cost. --json keeps Hermes' projection
on the row and gives the totals as "chain".
--children lists every session as stored.

Sessions a newer Hermes archived are left out, as Hermes' own listing does;
--archived lists them too, marked [archived], and --archived-only lists
them alone. --cwd keeps the sessions that ran in a directory or below it
(a newer Hermes records it); --min-messages those with at least N messages.`,
		Example: `  sessiondb sessions
  sessiondb sessions --source telegram --limit 50
  sessiondb sessions --exclude-source cron --exclude-source slack
  sessiondb sessions --children --json | jq '.[].id'
  sessiondb --db ~/.hermes/state.db sessions --archived
  sessiondb --db ~/.hermes/state.db sessions --cwd ~/src/api --min-messages 10`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cli.CheckPaging(f.Limit, f.Offset); err != nil {
				return err
			}
			if f.MinMessages < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--min-messages %d: want 0 or more", f.MinMessages)
			}
			return h.withStore(c.Context(), cli.ReadStore, func(st sessiondb.Store) error {
				rows, err := st.ListSessionsRich(c.Context(), f)
				if err != nil {
					return err
				}
				if h.JSON {
					rows = sessiondb.NonNil(rows)
					return h.PrintJSON(rows)
				}
				if len(rows) == 0 {
					fmt.Fprintln(h.Err, "no sessions match")
					return nil
				}
				return h.printSessions(rows, f.IncludeChildren)
			})
		},
	}
	c.Flags().StringVar(&f.Source, "source", "", "only sessions of this source (cli, telegram, slack, cron, ...)")
	c.Flags().StringArrayVar(&f.ExcludeSources, "exclude-source", nil, "leave out sessions of this source (repeatable)")
	c.Flags().IntVar(&f.Limit, "limit", 20, "how many sessions to list")
	c.Flags().IntVar(&f.Offset, "offset", 0, "skip this many sessions first (for paging)")
	c.Flags().BoolVar(&f.IncludeChildren, "children", false, "also list child sessions (continuations, forks) as rows of their own")
	c.Flags().BoolVar(&f.IncludeArchived, "archived", false, "also list sessions a newer Hermes archived (hidden by default), marked [archived]")
	c.Flags().BoolVar(&f.ArchivedOnly, "archived-only", false, "list only the sessions a newer Hermes archived")
	c.Flags().StringVar(&f.Cwd, "cwd", "", "only sessions that ran in this directory or below it")
	c.Flags().Int64Var(&f.MinMessages, "min-messages", 0, "only sessions with at least this many messages")
	return c
}

// printSessions writes the session table of `sessions`. Without
// children, a child listed is a /branch, and is marked so; with them,
// each child is marked by its kind.
func (h *group) printSessions(rows []sessiondb.RichSession, children bool) error {
	var t cli.Table
	t.Row("ID", "TITLE", "SOURCE", "MODEL", "STARTED", "LAST ACTIVE", "MSGS", "TOOLS", "TOKENS (IN+OUT)", "COST", "PREVIEW")
	for i := range rows {
		r := &rows[i]
		title := cli.OrDash(cli.Cut(deref(r.Title), 32))
		// An unmarked child among every child is left unmarked here.
		if kind := sessiondb.ListedChildKind(&r.Session, children); kind != "" && kind != "child" {
			title = "[" + kind + "] " + title
		}
		if r.Archived != 0 {
			title = "[archived] " + title
		}
		// A chain's row shows its totals, every figure of one kind (Hermes'
		// projection mixes the root's tokens and cost with the tip's counts).
		msgs, tools, tokens, cost := r.MessageCount, r.ToolCallCount, r.Tokens(), sessionCost(&r.Session)
		if c := r.Chain; c != nil {
			title = fmt.Sprintf("[chain of %d] %s", c.Sessions, title)
			msgs, tools, tokens, cost = c.Messages, c.ToolCalls, c.Tokens(), c.CostUSD
		}
		t.Row(r.ID, title, r.Source, cli.OrDash(deref(r.Model)),
			fmtTime(r.StartedAt), fmtTime(r.LastActive), strconv.FormatInt(msgs, 10), strconv.FormatInt(tools, 10),
			fmtCount(tokens), fmtCost(cost), r.Preview)
	}
	return t.Write(h.Out)
}

func (h *group) showCmd() *cobra.Command {
	var last int
	var full bool
	c := &cobra.Command{
		Use:   "show <id|prefix|title>",
		Short: "Print a session's transcript",
		Long: `Print a session as a readable transcript: each message with its place in the
session and its id ("#3 (id 33)"), role and time, the assistant's tool calls
with their arguments, the tool results, and the model's reasoning (labelled,
and dimmed on a terminal; "reasoning (provider)" is the provider's own text
when it differs). A group message the agent only observed reads "user
(observed)"; a chat platform's message id and a tool's effect follow the
time; multimodal parts are named ("[image: image/png]"). A session that
switched models lists each model's calls, tokens and cost in the header and
marks the switch with a "── model A → B" line before the first user message
after A's last call (Hermes' session_model_usage). --json gives each message
its "position" (1 for the first) beside its "id", the usage rows as "models"
and each switch as "model_switches" ({"before": message id, 0 after the
last; "from"; "to"}).

The session is found by exact id, then by a unique id prefix, then by title
(a title finds the newest session of its lineage: "proj" finds "proj #2"),
then by a title that differs only in case when one title alone does; else
the error names the titles close to what was typed. Message ids are what
` + "`sessiondb fork --at`" + ` takes.`,
		Example: `  sessiondb show 20260315_092437_c9a6ff
  sessiondb show 20260315            # a unique prefix is enough
  sessiondb show "Fix Docker build"
  sessiondb show proj --last 6       # the last 6 messages, tool calls kept whole
  sessiondb show proj --json`,
		Args: cli.ExactArgs(1, "one session id, id prefix or title"),
		RunE: func(c *cobra.Command, args []string) error {
			if last < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--last %d: want 0 (all) or more", last)
			}
			ctx := c.Context()
			return h.withSession(ctx, cli.ReadStore, args[0], true, func(st sessiondb.Store, s *sessiondb.Session) error {
				id := s.ID
				models, err := sessiondb.ReadSessionModels(ctx, st, id)
				if err != nil {
					return err
				}
				if last > 0 {
					p, err := st.GetMessagesPage(ctx, id, sessiondb.Page{Limit: last})
					if err != nil {
						return err
					}
					// The page is the session's last messages: the first
					// one's place is counted from the end.
					first := int64(1)
					if p.HasBefore {
						n, err := st.MessageCount(ctx, id)
						if err != nil {
							return err
						}
						first = max(1, n-int64(len(p.Messages))+1)
					}
					if h.JSON {
						return h.printShowJSON(s, models, p.HasBefore, first, func() ([]sessiondb.Message, error) {
							msgs := p.Messages
							p.Messages = nil
							return msgs, nil
						})
					}
					t := h.newTranscript(s, models, p.HasBefore, full, first)
					t.messages(p.Messages)
					t.end()
					return nil
				}
				// The whole session, a page at a time: a long session is
				// never held whole (20,000 messages took 200 MB as one slice
				// encoded at once).
				next := showPages(ctx, st, id)
				if h.JSON {
					return h.printShowJSON(s, models, false, 1, next)
				}
				t := h.newTranscript(s, models, false, full, 1)
				for {
					msgs, err := next()
					if err != nil {
						return err
					}
					if msgs == nil {
						t.end()
						return nil
					}
					t.messages(msgs)
				}
			})
		},
	}
	c.Flags().IntVar(&last, "last", 0, "show only the last N messages (0 = all); a tool call and its results stay together")
	c.Flags().BoolVar(&full, "full", false, "print long tool results whole (by default they are cut at 1000 characters)")
	return c
}

// maxToolResult is how much of a tool result the transcript prints without
// --full: results (file dumps, build logs) can run to megabytes.
const maxToolResult = 1000

// showPage is how many messages show reads at a time.
const showPage = 500

// showPages returns the pages of session id in order, one per call, and
// nil after the last.
func showPages(ctx context.Context, st sessiondb.Store, id string) func() ([]sessiondb.Message, error) {
	var after int64
	done := false
	return func() ([]sessiondb.Message, error) {
		if done {
			return nil, nil
		}
		p, err := st.GetMessagesPage(ctx, id, sessiondb.Page{AfterID: after, FromStart: true, Limit: showPage})
		if err != nil {
			return nil, err
		}
		if len(p.Messages) == 0 {
			return nil, nil
		}
		after, done = p.Messages[len(p.Messages)-1].ID, !p.HasAfter
		return p.Messages, nil
	}
}

// shownMessage is a message of show's --json: the message and its place in
// the session, 1 for the first, since ids count every session's messages.
type shownMessage struct {
	Position int64
	*sessiondb.Message
}

// MarshalJSON writes the message's own JSON with "position" first. It must
// be written out: the embedded Message's MarshalJSON would otherwise be
// promoted and leave the position out.
func (m shownMessage) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(m.Message)
	if err != nil {
		return nil, err
	}
	body, ok := bytes.CutPrefix(b, []byte("{"))
	if !ok {
		return nil, fmt.Errorf("message JSON is not an object: %.20q", b)
	}
	out := fmt.Appendf(nil, `{"position":%d`, m.Position)
	if len(bytes.TrimSpace(body)) > 1 { // more than the closing brace
		out = append(out, ',')
	}
	return append(out, body...), nil
}

// printShowJSON writes show's JSON object, {"has_earlier", "messages",
// "model_switches", "models", "session"} exactly as PrintJSON lays it
// out, taking the messages a page at a time from next (nil ends them);
// the first is at position first.
func (h *group) printShowJSON(s *sessiondb.Session, models *sessiondb.SessionModels, earlier bool, first int64, next func() ([]sessiondb.Message, error)) error {
	w := bufio.NewWriterSize(h.Out, 1<<16)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	put := func(prefix string, v any) error {
		// The encoder ends each value with a newline, where the
		// surrounding layout wants the separator.
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		e.SetIndent(prefix, "  ")
		if err := e.Encode(v); err != nil {
			return err
		}
		_, err := w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
		return err
	}
	fmt.Fprintf(w, "{\n  \"has_earlier\": %t,\n  \"messages\": [", earlier)
	n := 0
	for {
		msgs, err := next()
		if err != nil {
			return err
		}
		if msgs == nil {
			break
		}
		for i := range msgs {
			if n > 0 {
				w.WriteString(",")
			}
			w.WriteString("\n    ")
			if err := put("    ", shownMessage{first + int64(n), &msgs[i]}); err != nil {
				return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write output")
			}
			n++
		}
	}
	if n > 0 {
		w.WriteString("\n  ")
	}
	// Where the session's calls went to another model: before is the id
	// of the message the switch comes before (0: after the last one).
	type shownSwitch struct {
		Before int64  `json:"before"`
		From   string `json:"from"`
		To     string `json:"to"`
	}
	switches := []shownSwitch{}
	for _, sw := range models.Switches {
		switches = append(switches, shownSwitch{sw.Before, sw.From.Model, sw.To.Model})
	}
	routes := models.Routes
	if routes == nil {
		routes = []sessiondb.ModelRoute{}
	}
	w.WriteString("],")
	for _, kv := range []struct {
		key string
		v   any
	}{{"model_switches", switches}, {"models", routes}} {
		fmt.Fprintf(w, "\n  %q: ", kv.key)
		if err := put("  ", kv.v); err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write output")
		}
		w.WriteString(",")
	}
	w.WriteString("\n  \"session\": ")
	if err := put("  ", s); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write output")
	}
	w.WriteString("\n}\n")
	if err := w.Flush(); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write output")
	}
	return nil
}

// transcript prints a session's messages as a readable transcript, one
// page after another.
type transcript struct {
	h    *group
	tty  bool
	full bool
	day  string // the local day of the last message printed
	pos  int64  // the place in the session of the next message, from 1
	// models are the models the session used and where it switched.
	models *sessiondb.SessionModels
}

// newTranscript prints the session's header and returns the printer of
// its messages, the first of which is at position first.
func (h *group) newTranscript(s *sessiondb.Session, models *sessiondb.SessionModels, earlier, full bool, first int64) *transcript {
	tty := h.Styled()
	// Every stored value is escaped before it is styled (cli.Printable):
	// a title or message must not reach the terminal as a control sequence.
	line := cli.PrintableLine
	title := deref(s.Title)
	if title == "" {
		title = "(untitled)"
	}
	h.Printf("%s  %s\n", cli.Style(tty, cli.Bold, line(title)), line(s.ID))
	h.Printf("  source %s · model %s · started %s", line(s.Source), line(cli.OrDash(deref(s.Model))), fmtTime(s.StartedAt))
	if s.EndedAt != nil {
		h.Printf(" · ended %s (%s)", fmtTime(*s.EndedAt), line(cli.OrDash(deref(s.EndReason))))
	}
	h.Printf("\n  %d messages · %d tool calls · %s in / %s out tokens · %s\n",
		s.MessageCount, s.ToolCallCount, fmtCount(s.InputTokens), fmtCount(s.OutputTokens), fmtCost(sessionCost(s)))
	if p := deref(s.ParentSessionID); p != "" {
		h.Printf("  continues %s\n", line(p))
	}
	if models.Switched() {
		// Usage by model (Hermes' session_model_usage), in the order
		// the session first called each.
		h.Printf("  models, in order of first use:\n")
		for _, r := range models.Routes {
			h.Printf("    %s · %d calls · %s in / %s out tokens · %s\n", line(r.Model), r.APICalls,
				fmtCount(r.InputTokens), fmtCount(r.OutputTokens), fmtCost(routeCost(r)))
		}
	}
	if earlier {
		h.Printf("\n  … earlier messages not shown (drop --last to see them all)\n")
	}
	return &transcript{h: h, tty: tty, full: full, pos: first, models: models}
}

// routeCost is what a model's calls cost: the billed figure when there
// is one, else the estimate (as sessionCost).
func routeCost(r sessiondb.ModelRoute) float64 {
	if r.ActualCostUSD != 0 {
		return r.ActualCostUSD
	}
	return r.EstimatedCostUSD
}

// modelSwitch prints the line that marks where the session's calls went
// from one model to the next.
func (t *transcript) modelSwitch(sw *sessiondb.ModelSwitch, note string) {
	l := fmt.Sprintf("── model %s → %s (first call %s)%s ──", cli.PrintableLine(sw.From.Model), cli.PrintableLine(sw.To.Model),
		fmtClock(sw.To.FirstSeen, ""), note)
	t.h.Printf("\n%s\n", cli.Style(t.tty, cli.Bold, l))
}

// end closes the transcript: a switch to a model whose stretch holds no
// message yet is shown after the last message.
func (t *transcript) end() {
	for i := range t.models.Switches {
		if sw := &t.models.Switches[i]; sw.Before == 0 {
			t.modelSwitch(sw, "; no message since")
		}
	}
}

// messages prints msgs, the next in the transcript.
func (t *transcript) messages(msgs []sessiondb.Message) {
	h, tty, line := t.h, t.tty, cli.PrintableLine
	for i := range msgs {
		m := &msgs[i]
		// Messages are numbered in the session; the id (what fork --at
		// takes) counts every session's messages, so it stays beside.
		if sw := t.models.At(m.ID); sw != nil {
			t.modelSwitch(sw, "")
		}
		head := fmt.Sprintf("#%d (id %d) %s", t.pos, m.ID, line(m.Role))
		t.pos++
		if m.Observed != 0 {
			// A group message the agent saw but was not addressed by:
			// context, not a turn of the user (Hermes schema 13).
			head += " (observed)"
		}
		if m.Role == "tool" {
			head += fmt.Sprintf(" %s ← %s", line(cli.OrDash(deref(m.ToolName))), line(cli.OrDash(deref(m.ToolCallID))))
		}
		meta := fmtClock(m.Timestamp, t.day)
		if p := deref(m.PlatformMessageID); p != "" {
			meta += " · platform id " + line(p)
		}
		if e := deref(m.EffectDisposition); e != "" {
			meta += " · effect " + line(e)
		}
		h.Printf("\n%s  %s\n", cli.Style(tty, cli.Bold, head), cli.Style(tty, cli.Dim, meta))
		t.day = sessiondb.FromEpochSeconds(m.Timestamp).Local().Format("2006-01-02")
		r := deref(m.Reasoning)
		if r != "" {
			h.Printf("%s\n", cli.Style(tty, cli.Dim, indent(cli.Printable("reasoning: "+r), "  │ ")))
		}
		// The provider's own reasoning text (schema 7), when it says
		// more than the reasoning above.
		if rc := deref(m.ReasoningContent); strings.TrimSpace(rc) != "" && rc != r {
			h.Printf("%s\n", cli.Style(tty, cli.Dim, indent(cli.Printable("reasoning (provider): "+rc), "  │ ")))
		}
		// Multimodal content of a newer Hermes shows its text and names
		// its other parts; --json keeps the stored form.
		text := m.Text()
		if m.Role == "tool" && !t.full && utf8.RuneCountInString(text) > maxToolResult {
			r := []rune(text)
			text = string(r[:maxToolResult]) + fmt.Sprintf("\n… %d more characters (--full shows them)", len(r)-maxToolResult)
		}
		if strings.TrimSpace(text) != "" {
			h.Printf("%s\n", indent(cli.Printable(text), "  "))
		}
		for _, tc := range toolCalls(m.ToolCalls) {
			h.Printf("  → %s %s  %s\n", cli.Style(tty, cli.Bold, line(tc.name)), line(tc.args), cli.Style(tty, cli.Dim, "("+line(tc.id)+")"))
		}
	}
}

type shownCall struct{ id, name, args string }

// toolCalls reads the OpenAI-style tool_calls JSON of a message for display;
// anything else shows as its raw JSON so nothing is hidden.
func toolCalls(raw json.RawMessage) []shownCall {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var list []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments any    `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return []shownCall{{id: "?", name: "tool_calls", args: string(raw)}}
	}
	out := make([]shownCall, 0, len(list))
	for _, tc := range list {
		args := ""
		switch a := tc.Function.Arguments.(type) {
		case string:
			args = a
		case nil:
		default:
			b, _ := json.Marshal(a)
			args = string(b)
		}
		out = append(out, shownCall{id: cli.OrDash(tc.ID), name: cli.OrDash(tc.Function.Name), args: args})
	}
	return out
}
