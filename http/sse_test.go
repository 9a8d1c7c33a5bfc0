package http_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// sseEvent is one received Server-Sent Event.
type sseEvent struct {
	ID, Name, Data string
}

// sseClient reads events from a stream.
type sseClient struct {
	t      *testing.T
	resp   *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

// openSSE connects to path with the given headers; the stream is closed
// when the test ends. A response that is not a stream fails the test.
func (f *fixture) openSSE(path string, hdr ...string) *sseClient {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(ctxb, 30*time.Second)
	resp, err := f.ts.Client().Do(f.request(ctx, "GET", f.ts.URL+path, "", hdr...))
	if err != nil {
		cancel()
		f.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		f.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c := &sseClient{t: f.t, resp: resp, sc: bufio.NewScanner(resp.Body), cancel: cancel}
	f.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return c
}

// next returns the next event, skipping comments and the retry field.
func (c *sseClient) next() sseEvent {
	c.t.Helper()
	var ev sseEvent
	for c.sc.Scan() {
		line := c.sc.Text()
		switch {
		case line == "":
			if ev.Data != "" {
				return ev
			}
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.Name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.Data = line[6:]
		}
	}
	c.t.Fatalf("stream ended: %v", c.sc.Err())
	return ev
}

func TestSessionEventsLiveAndResumable(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("s", "cli", "m")
	first := f.msg("s", "user", "before the stream")
	// Another process appends: a second store on the same file.
	other, err := sqlite.Open(ctxb, f.path, sqlite.Options{})
	other = testkit.Opened(t, other, err)

	live := f.openSSE("/api/v1/sessions/s/events")
	text := "appended by another process"
	second, err := other.AppendMessage(ctxb, sessiondb.NewMessage{SessionID: "s", Role: "assistant", Content: &text})
	if err != nil {
		t.Fatal(err)
	}
	ev := live.next()
	var m sessiondb.Message
	if err := json.Unmarshal([]byte(ev.Data), &m); err != nil {
		t.Fatal(err)
	}
	if ev.Name != "message" || ev.ID != itoa(second) || m.ID != second || *m.Content != text {
		t.Fatalf("event %+v", ev)
	}
	third := f.msg("s", "user", "appended by the server's own store")
	if ev := live.next(); ev.ID != itoa(third) {
		t.Fatalf("in-process append: event %+v, want id %d", ev, third)
	}

	// A client that reconnects with Last-Event-ID gets what it missed, in
	// order, and nothing twice.
	again := f.openSSE("/api/v1/sessions/s/events", "Last-Event-ID", itoa(first))
	for _, want := range []int64{second, third} {
		if ev := again.next(); ev.ID != itoa(want) {
			t.Fatalf("resumed: event %+v, want id %d", ev, want)
		}
	}
	fourth := f.msg("s", "user", "after resuming")
	if ev := again.next(); ev.ID != itoa(fourth) {
		t.Fatalf("after resuming: %+v, want %d", ev, fourth)
	}
	// Each event sent is counted under its stream's name: three on each
	// stream (the first, still open, also sends the fourth message). A
	// count follows its event's write, so it may land just after the
	// client has read the event.
	testkit.WaitFor(t, "six message events counted", func() bool {
		return bytes.Contains(f.get("/metrics").body, []byte(`sessiondb_live_events_total{stream="messages"} 6`+"\n"))
	})
}

func TestSessionEventsRefusals(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("s", "cli", "m")
	f.get("/api/v1/sessions/none/events").apiError(t, 404, "not_found")
	f.get("/api/v1/sessions/s/events", "Last-Event-ID", "x1").apiError(t, 400, "invalid")
}

func itoa(n int64) string { return strings.TrimSpace(jsonBody(n)) }
