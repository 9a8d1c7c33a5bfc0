package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/mailbox"
)

// mailboxesView is the mailboxes page: every session under the data root
// with its summary, troubled sessions marked, and the host daemon's state.
type mailboxesView struct {
	Now         time.Time
	Host        *hostd.Status
	HostRunning bool
	Rows        []mailboxRow
	// Troubled counts the sessions that are stuck, backed off,
	// quarantined, unreadable or have failed rows.
	Troubled int
}

// mailboxRow is one session's summary as the page shows it.
type mailboxRow struct {
	hostd.SessionReport
	URL string
	// Trouble says what is wrong in a few words ("" when nothing is).
	Trouble      string
	BackoffUntil time.Time
}

// uiMailboxes: GET /mailboxes shows every session's mailbox: due and
// failed rows, undelivered outbound rows, heartbeat age, the stuck
// verdict and the host daemon's back-off of it. The page follows the data
// root's event stream and refreshes itself as mailboxes change.
func (s *Server) uiMailboxes(w http.ResponseWriter, r *http.Request) error {
	now := s.now()
	rep, err := hostd.Report(r.Context(), s.cfg.Mailboxes, s.cfg.DataRoot, now)
	if err != nil {
		return err
	}
	v := mailboxesView{Now: now, Host: rep.Host, HostRunning: rep.HostRunning}
	for _, x := range rep.Sessions {
		row := mailboxRow{SessionReport: x, Trouble: trouble(x, now),
			URL: mailboxURL(x.Ref)}
		if x.Host != nil {
			row.BackoffUntil = x.Host.BackoffUntil()
		}
		if row.Trouble != "" {
			v.Troubled++
		}
		v.Rows = append(v.Rows, row)
	}
	s.page(w, r, "mailboxes", v)
	return nil
}

// trouble names what is wrong with a session, most serious first.
func trouble(x hostd.SessionReport, now time.Time) string {
	switch {
	case x.Stuck == "?":
		return "unreadable"
	case x.Host != nil && x.Host.Quarantined:
		return "quarantined"
	case x.Stuck != mailbox.StuckOK.String():
		return "stuck (" + x.Stuck + ")"
	case x.Host != nil && x.Host.BackoffUntil().After(now):
		return "backed off"
	case x.OutFailed > 0 || x.Failed > 0:
		return "failed rows"
	case x.HotJournal:
		return "hot journal"
	}
	return ""
}

// mailboxView is one session's mailbox page: its summary and its newest
// rows, failed ones with a requeue button.
type mailboxView struct {
	mailboxRow
	Now      time.Time
	Group    string
	Session  string
	Inbound  []inboundRow
	Outbound []outboundRow
	// RequeueURL is the API route the requeue buttons post to;
	// Requeueable counts the failed rows it would put back in line.
	RequeueURL  string
	EventsURL   string
	Requeueable int
}

type inboundRow struct {
	mailbox.InboundView
	Content rowContent
	// Body is the requeue request of this row alone.
	Body string
}

type outboundRow struct {
	mailbox.OutboundView
	Content rowContent
	Body    string
}

// rowContent is a row's JSON content: a line to read (its text when it
// has one) and the whole, indented; for NanoClaw's question card, the
// question and its options to read (the JSON stays one click away).
type rowContent struct {
	Brief, Full string
	Question    *questionView
}

// questionView is an ask_question card as a person reads it.
type questionView struct {
	Title, Question string
	Options         []questionOption
}

type questionOption struct{ Label, Value string }

// mailboxRows is how many of a session's newest rows the page shows.
const mailboxRows = 200

// uiMailbox: GET /mailboxes/{group}/{session} shows one session's
// mailbox: the summary, then its newest inbound and outbound rows with
// their states; failed rows can be requeued (POST to the API, with the
// token's cookie, from this origin). The page follows the session's event
// stream and refreshes itself.
func (s *Server) uiMailbox(w http.ResponseWriter, r *http.Request) error {
	a, err := s.mailboxOf(r, mailboxRows)
	if err != nil {
		return err
	}
	ref := a.Session.Ref
	base := "/api/v1/mailboxes/" + url.PathEscape(ref.AgentGroupID) + "/" + url.PathEscape(ref.SessionID)
	v := mailboxView{Now: a.Now, Group: ref.AgentGroupID, Session: ref.SessionID,
		mailboxRow: mailboxRow{SessionReport: a.Session, Trouble: trouble(a.Session, a.Now), URL: mailboxURL(ref)},
		RequeueURL: base + "/requeue", EventsURL: base + "/events"}
	if a.Session.Host != nil {
		v.BackoffUntil = a.Session.Host.BackoffUntil()
	}
	for _, x := range a.Inbound {
		row := inboundRow{InboundView: x, Content: contentOf(x.Content)}
		if x.State == mailbox.StatusFailed {
			row.Body = requeueBody(x.ID)
			v.Requeueable++
		}
		v.Inbound = append(v.Inbound, row)
	}
	for _, x := range a.Outbound {
		row := outboundRow{OutboundView: x, Content: contentOf(x.Content)}
		if x.Delivery.Status == mailbox.DeliveredFailed {
			row.Body = requeueBody(x.ID)
			v.Requeueable++
		}
		v.Outbound = append(v.Outbound, row)
	}
	// The page follows the session's traffic from the newest row it
	// shows: a row written between this read and the stream's start is
	// news to it.
	var newest int64
	for _, x := range a.Inbound {
		newest = max(newest, x.Seq)
	}
	for _, x := range a.Outbound {
		newest = max(newest, x.Seq)
	}
	v.EventsURL = withQuery(v.EventsURL, "after", strconv.FormatInt(newest, 10))
	s.page(w, r, "mailbox", v)
	return nil
}

// requeueBody is the requeue request for one row.
func requeueBody(id string) string {
	b, _ := json.Marshal(map[string][]string{"ids": {id}})
	return string(b)
}

// contentOf shows a row's content: the text of a chat message, else the
// compact JSON, on one line; and the whole indented.
func contentOf(raw json.RawMessage) rowContent {
	var c rowContent
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") == nil {
		c.Full = b.String()
	} else {
		c.Full = string(raw)
	}
	var m struct {
		Text      string `json:"text"`
		Operation string `json:"operation"`
		Prompt    string `json:"prompt"`
		// NanoClaw's question card and its answer (mailbox.Question,
		// mailbox.QuestionResponse).
		Type     string `json:"type"`
		QID      string `json:"questionId"`
		Title    string `json:"title"`
		Question string `json:"question"`
		Options  []struct {
			Label string `json:"label"`
			Value string `json:"value"`
		} `json:"options"`
		Selected string `json:"selectedOption"`
		UserID   string `json:"userId"`
	}
	if json.Unmarshal(raw, &m) == nil {
		switch {
		case m.Type == "ask_question" && m.Question != "":
			q := &questionView{Title: m.Title, Question: m.Question}
			for _, o := range m.Options {
				q.Options = append(q.Options, questionOption{Label: o.Label, Value: o.Value})
			}
			c.Question, c.Brief = q, "Question: "+m.Question
		case m.Type == "question_response" && m.QID != "":
			c.Brief = "Answer to question " + m.QID + ": " + m.Selected
			if m.UserID != "" {
				c.Brief += " (from " + m.UserID + ")"
			}
		case m.Text != "":
			c.Brief = m.Text
		case m.Prompt != "":
			c.Brief = m.Prompt
		case m.Operation != "":
			c.Brief = "(" + m.Operation + ")"
		}
	}
	if c.Brief == "" {
		var cb bytes.Buffer
		if json.Compact(&cb, raw) == nil {
			c.Brief = cb.String()
		} else {
			c.Brief = string(raw)
		}
	}
	return c
}
