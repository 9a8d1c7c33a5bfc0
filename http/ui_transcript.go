package http

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/safetext"
)

// transcriptPageSize is how many messages a transcript page shows (the
// store grows a page to keep a tool call with its results).
const transcriptPageSize = 100

// Long texts are cut where they are shown, with a "show all" link that
// fetches the whole text: a tool's output can be megabytes, and a page
// of a hundred such messages must still open at once. Tool results and
// arguments are cut shorter than what people and models write.
const (
	clipRunes     = 4000
	clipLines     = 60
	toolClipRunes = 1500
	toolClipLines = 20
)

// sessionView is the transcript page: the session's header and one page
// of its messages.
type sessionView struct {
	S        *sessiondb.Session
	Title    string
	Tokens   int64
	Cost     float64
	Messages []*msgView
	// First and Last are the ids at the page's edges (the cursors).
	First, Last         int64
	HasBefore, HasAfter bool
	// At is the message a link asked for (?at=), marked on the page.
	At int64
	// Live is set when the page ends at the newest message of a session
	// that has not ended: the page then follows the session's events and
	// grows. Ended is set on the last page of an ended session.
	Live, Ended bool
	// Models are the models the session used (Hermes'
	// session_model_usage) and where it switched; Pending are the
	// switches after the last message, shown on an ended session's last
	// page.
	Models  *sessiondb.SessionModels
	Pending []sessiondb.ModelSwitch
	// Archivable is set when the store can archive (canArchive): the
	// page then offers archive or unarchive.
	Archivable bool
}

// msgView is one message as the transcript shows it. A tool result whose
// call is on the same page is shown inside that call (callView.Result),
// not on its own.
type msgView struct {
	ID        int64
	SessionID string
	Role      string
	Time      float64
	Text      clipped
	// Markdown is Text rendered (markdown.go), empty when the text is
	// shown plain: a tool's output, or a text too long to render.
	Markdown template.HTML
	// Reasoning is the model's reasoning text, folded on the page;
	// ReasoningDetails its structured form when there is no text.
	Reasoning        clipped
	ReasoningDetails string
	Calls            []*callView
	// ToolName and CallID are a tool result's.
	ToolName, CallID string
	Finish           string
	TokenCount       int64
	Target           bool
	// Observed marks a group message the agent saw but was not
	// addressed by (Hermes schema 13): context, not a user's turn.
	Observed bool
	// ReasoningContent is the provider's own reasoning text (schema 7)
	// when it differs from Reasoning.
	ReasoningContent clipped
	// PlatformID is the chat platform's message id; Effect a tool
	// result's effect disposition.
	PlatformID, Effect string
	// Switch is the model switch shown before the message.
	Switch *sessiondb.ModelSwitch
}

// callView is one tool call of an assistant message: its name, its
// arguments, and its result when the result is on the page.
type callView struct {
	ID, Name string
	Args     clipped
	Result   *msgView
	// Open unfolds the call: its result is the message a link asked for.
	Open bool
}

// clipped is a text cut for showing: Head is what the page shows; when
// Cut, Total is the whole text's length in characters and URL fetches it.
// Lines is the whole text's line count.
type clipped struct {
	Head  string
	Cut   bool
	Total int
	URL   string
	Lines int
}

// clip cuts text to at most maxRunes characters and maxLines lines.
func clip(text string, maxRunes, maxLines int, url string) clipped {
	c := clipped{Head: text}
	if text != "" {
		c.Lines = strings.Count(text, "\n") + 1
	}
	n, lines := 0, 0
	for i, r := range text {
		if n == maxRunes || lines == maxLines {
			c.Head, c.Cut, c.Total, c.URL = text[:i], true, utf8.RuneCountInString(text), url
			return c
		}
		n++
		if r == '\n' {
			lines++
		}
	}
	return c
}

// toolCall is one entry of a message's tool_calls as OpenAI-style agents
// store it; Arguments is usually a JSON string holding JSON.
type toolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	// Name is where a few agents put the tool's name without "function".
	Name string `json:"name"`
}

// parseToolCalls reads a message's tool_calls; a shape it does not know
// becomes one call showing the raw JSON, so nothing stored is hidden.
func parseToolCalls(raw json.RawMessage) []toolCall {
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "[]" {
		return nil
	}
	var calls []toolCall
	if err := json.Unmarshal(raw, &calls); err != nil {
		var c toolCall
		c.Function.Name = "(tool calls)"
		c.Function.Arguments = raw
		return []toolCall{c}
	}
	return calls
}

// argumentsText shows a call's arguments: a JSON string holding JSON is
// unwrapped and indented; anything else is shown as stored.
func argumentsText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		raw = json.RawMessage(s)
	}
	var b bytes.Buffer
	if json.Valid(raw) && json.Indent(&b, raw, "", "  ") == nil {
		return b.String()
	}
	return string(raw)
}

// textURL is where a message's whole text is read (part: "" the content,
// "reasoning", or "call" with the call's index).
func textURL(sessionID string, id int64, kv ...string) string {
	return withQuery(sessionURL(sessionID)+"/m/"+strconv.FormatInt(id, 10)+"/text", kv...)
}

// toMsgViews turns a page of messages into what the transcript shows,
// putting each tool result inside its call when the call is on the page.
func toMsgViews(msgs []sessiondb.Message, at int64, models *sessiondb.SessionModels, md *markdownRenderer) []*msgView {
	var out []*msgView
	open := map[string]*callView{}
	budget := newMDBudget()
	for i := range msgs {
		m := &msgs[i]
		v := &msgView{ID: m.ID, SessionID: m.SessionID, Role: m.Role, Time: m.Timestamp,
			ToolName: deref(m.ToolName), CallID: deref(m.ToolCallID), Finish: deref(m.FinishReason), Target: m.ID == at,
			Observed: m.Observed != 0, PlatformID: deref(m.PlatformMessageID), Effect: deref(m.EffectDisposition), Switch: models.At(m.ID)}
		if m.TokenCount != nil {
			v.TokenCount = *m.TokenCount
		}
		limRunes, limLines := clipRunes, clipLines
		if m.Role == "tool" {
			limRunes, limLines = toolClipRunes, toolClipLines
		}
		v.Text = clip(m.Text(), limRunes, limLines, textURL(m.SessionID, m.ID))
		if m.Role != "tool" {
			// Tool output is seldom Markdown: it stays as the tool wrote it.
			v.Markdown = md.render(m.Text(), budget)
		}
		if r := deref(m.Reasoning); r != "" {
			v.Reasoning = clip(r, clipRunes, clipLines, textURL(m.SessionID, m.ID, "part", "reasoning"))
		} else if d := deref(m.ReasoningDetails); d != "" && d != "null" && d != "[]" {
			v.ReasoningDetails = argumentsText(json.RawMessage(d))
		}
		if rc := deref(m.ReasoningContent); strings.TrimSpace(rc) != "" && rc != deref(m.Reasoning) {
			v.ReasoningContent = clip(rc, clipRunes, clipLines, textURL(m.SessionID, m.ID, "part", "reasoning_content"))
		}
		for j, c := range parseToolCalls(m.ToolCalls) {
			name := c.Function.Name
			if name == "" {
				name = c.Name
			}
			cv := &callView{ID: c.ID, Name: name,
				Args: clip(argumentsText(c.Function.Arguments), toolClipRunes, toolClipLines, textURL(m.SessionID, m.ID, "part", "call", "call", strconv.Itoa(j)))}
			v.Calls = append(v.Calls, cv)
			if c.ID != "" {
				open[c.ID] = cv
			}
		}
		if m.Role == "tool" && v.CallID != "" {
			if cv := open[v.CallID]; cv != nil && cv.Result == nil {
				cv.Result = v
				if v.Target {
					cv.Open = true
					// The asked-for result is inside its call: mark the
					// assistant message instead, so the page scrolls there.
					for _, o := range out {
						for _, c := range o.Calls {
							if c == cv {
								o.Target = true
							}
						}
					}
				}
				continue
			}
		}
		out = append(out, v)
	}
	return out
}

// uiSession: GET /s/{id} shows a session and one page of its transcript:
// from the start (default), from=end (the newest), after=ID or before=ID
// (the next and previous pages), or at=ID (the page holding that message,
// with a few before it: where a search hit leads).
func (s *Server) uiSession(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	after, before, at := p.id("after"), p.id("before"), p.id("at")
	from := p.str("from")
	if from != "" && from != "start" && from != "end" {
		p.fail("from", "%q is not start or end", from)
	}
	if p.err != nil {
		return p.err
	}
	ctx := r.Context()
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	x, err := s.cfg.History.GetSession(ctx, id)
	if err != nil {
		return err
	}
	models, err := sessiondb.ReadSessionModels(ctx, s.cfg.History, id)
	if err != nil {
		return err
	}
	v := sessionView{S: x, Title: deref(x.Title), Tokens: x.Tokens(), Cost: sessionCost(x), At: at, Models: models,
		Archivable: s.canArchive()}
	var msgs []sessiondb.Message
	switch {
	case at > 0:
		// A few messages before the target (grown back to their tool
		// call), then a page from it on.
		pre, err := s.cfg.History.GetMessagesPage(ctx, id, sessiondb.Page{BeforeID: at, Limit: 3})
		if err != nil {
			return err
		}
		post, err := s.cfg.History.GetMessagesPage(ctx, id, sessiondb.Page{AfterID: at - 1, FromStart: true, Limit: transcriptPageSize})
		if err != nil {
			return err
		}
		msgs = append(pre.Messages, post.Messages...)
		v.HasBefore, v.HasAfter = pre.HasBefore, post.HasAfter
	default:
		pg := sessiondb.Page{AfterID: after, BeforeID: before, Limit: transcriptPageSize, FromStart: from != "end"}
		mp, err := s.cfg.History.GetMessagesPage(ctx, id, pg)
		if err != nil {
			return err
		}
		msgs, v.HasBefore, v.HasAfter = mp.Messages, mp.HasBefore, mp.HasAfter
	}
	if n := len(msgs); n > 0 {
		v.First, v.Last = msgs[0].ID, msgs[n-1].ID
	} else {
		v.Last = after
	}
	v.Messages = toMsgViews(msgs, at, models, s.ui.markdown)
	// An ended session takes no more messages: its last page says when
	// and why it ended instead of promising new ones.
	v.Live = !v.HasAfter && v.S.EndedAt == nil
	v.Ended = !v.HasAfter && v.S.EndedAt != nil
	// A live page gets a switch with the message after it (the live
	// fragment); an ended session shows it after its last message.
	if v.Ended {
		for _, sw := range models.Switches {
			if sw.Before == 0 {
				v.Pending = append(v.Pending, sw)
			}
		}
	}
	s.page(w, r, "session", v)
	return nil
}

// uiLive: GET /s/{id}/live?after=ID renders the messages after ID as an
// HTML fragment (no frame): the live transcript asks for it when the
// session's event stream says a message committed, so new messages are
// rendered by the same template as the page. X-Has-More says whether the
// store holds more than the fragment; X-Last-ID is the fragment's newest
// id (the next after=).
func (s *Server) uiLive(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	after := p.id("after")
	if p.err != nil {
		return p.err
	}
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	mp, err := s.cfg.History.GetMessagesPage(r.Context(), id, sessiondb.Page{AfterID: after, FromStart: true, Limit: transcriptPageSize})
	if err != nil {
		return err
	}
	models, err := sessiondb.ReadSessionModels(r.Context(), s.cfg.History, id)
	if err != nil {
		return err
	}
	last := after
	if n := len(mp.Messages); n > 0 {
		last = mp.Messages[n-1].ID
	}
	w.Header().Set("X-Last-ID", strconv.FormatInt(last, 10))
	if mp.HasAfter {
		w.Header().Set("X-Has-More", "1")
	}
	return s.fragment(w, "session", "messages", toMsgViews(mp.Messages, 0, models, s.ui.markdown))
}

// uiMessageText: GET /s/{id}/m/{mid}/text?part=&call= answers a
// message's whole text as plain text (what "show all" shows): the content
// by default, part=reasoning its reasoning, part=reasoning_content the
// provider's reasoning text, part=call&call=N the
// arguments of its Nth tool call. Control characters are escaped as on
// the page.
func (s *Server) uiMessageText(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	part := p.str("part")
	call := p.int("call", 0, 0, 1<<20)
	mid, err := strconv.ParseInt(r.PathValue("mid"), 10, 64)
	if err != nil || mid <= 0 {
		p.fail("message id", "%q is not a message id", r.PathValue("mid"))
	}
	if p.err != nil {
		return p.err
	}
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	mp, err := s.cfg.History.GetMessagesPage(r.Context(), id, sessiondb.Page{AfterID: mid - 1, FromStart: true, Limit: 1})
	if err != nil {
		return err
	}
	if len(mp.Messages) == 0 || mp.Messages[0].ID != mid {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "session %s has no message %d", id, mid)
	}
	m := &mp.Messages[0]
	var text string
	switch part {
	case "":
		text = m.Text()
	case "reasoning":
		text = deref(m.Reasoning)
	case "reasoning_content":
		text = deref(m.ReasoningContent)
	case "call":
		calls := parseToolCalls(m.ToolCalls)
		if call >= len(calls) {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "message %d has no tool call %d", mid, call)
		}
		text = argumentsText(calls[call].Function.Arguments)
	default:
		return sessiondb.Errorf(sessiondb.EINVALID, "parameter part: %q is not reasoning, reasoning_content or call", part)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte(safetext.Text(text)))
	return nil
}
