package http_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/hostd"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// close ends the stream from the client's side.
func (c *sseClient) close() {
	c.cancel()
	c.resp.Body.Close()
}

// TestMailboxStreamsShareOneWatch: 200 live mailbox streams on one server
// (180 of single sessions, 20 of the whole data root) hold one inotify
// instance between them, not one each (the user's default limit is 128,
// shared with every other program), and one watch per folder; every stream
// still gets its events, woken by notification alone (the polling fallback
// is an hour); closing the streams removes the watches.
func TestMailboxStreamsShareOneWatch(t *testing.T) {
	const groups, perGroup, perSession, rootStreams = 4, 5, 9, 20
	f := newFixture(t, sdbhttp.Config{})
	root := filepath.Join(t.TempDir(), "data")
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var refs []mailbox.SessionRef
	for g := range groups {
		for s := range perGroup {
			ref := mailbox.SessionRef{AgentGroupID: fmt.Sprintf("g%d", g), SessionID: fmt.Sprintf("s%d", s)}
			if err := h.InitSession(ctxb, ref); err != nil {
				t.Fatal(err)
			}
			refs = append(refs, ref)
		}
	}
	f.serve(sdbhttp.Config{Mailboxes: h, DataRoot: root, Token: testToken, Poll: time.Hour})
	baseInst, baseWatches := testkit.Inotify(t)

	type sessionStream struct {
		ref mailbox.SessionRef
		c   *sseClient
	}
	var sessions []sessionStream
	var all []*sseClient
	for _, ref := range refs {
		for range perSession {
			c := f.openSSE("/api/v1/mailboxes/" + ref.AgentGroupID + "/" + ref.SessionID + "/events")
			if ev := c.next(); ev.Name != "status" { // the stream is up, its watch made
				t.Fatalf("first event of %s: %+v", ref, ev)
			}
			sessions = append(sessions, sessionStream{ref, c})
			all = append(all, c)
		}
	}
	// A data-root stream's view, kept as its events say.
	type rootStream struct {
		c    *sseClient
		view map[mailbox.SessionRef]hostd.SessionReport
	}
	var roots []rootStream
	read := func(r rootStream) {
		t.Helper()
		ev := r.c.next()
		switch ev.Name {
		case "report":
			var rep mailboxesAnswer
			json.Unmarshal([]byte(ev.Data), &rep)
			clear(r.view)
			for _, s := range rep.Sessions {
				r.view[s.Ref] = s
			}
		case "session":
			var s hostd.SessionReport
			json.Unmarshal([]byte(ev.Data), &s)
			r.view[s.Ref] = s
		default:
			t.Fatalf("data-root stream: unexpected event %+v", ev)
		}
	}
	for range rootStreams {
		r := rootStream{f.openSSE("/api/v1/mailboxes/events"), map[mailbox.SessionRef]hostd.SessionReport{}}
		for len(r.view) != len(refs) {
			read(r)
		}
		roots = append(roots, r)
		all = append(all, r.c)
	}

	// The root, the group folders and the session folders: one watch each.
	folders := 1 + groups + len(refs)
	if inst, watches := testkit.Inotify(t); inst-baseInst > 1 || watches-baseWatches != folders {
		t.Fatalf("%d streams hold %d inotify instances and %d watches; want 1 instance and one watch per folder (%d)",
			len(all), inst-baseInst, watches-baseWatches, folders)
	}

	for _, ref := range refs {
		if _, _, err := h.Enqueue(ctxb, ref, mailbox.InboundMessage{ID: "new-" + ref.SessionID, Kind: "chat", Content: json.RawMessage(`{"text":"hi"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sessions {
		for {
			ev := s.c.next()
			if ev.Name != "inbound" {
				continue
			}
			var row mailbox.InboundView
			json.Unmarshal([]byte(ev.Data), &row)
			if row.ID != "new-"+s.ref.SessionID {
				t.Fatalf("stream of %s: row %+v", s.ref, row)
			}
			break
		}
	}
	for _, r := range roots {
		for _, ref := range refs {
			for r.view[ref].Due != 1 {
				read(r)
			}
		}
	}

	for _, c := range all {
		c.close()
	}
	testkit.WaitFor(t, "the closed streams' watches to go", func() bool {
		_, watches := testkit.Inotify(t)
		return watches == baseWatches
	})
}
