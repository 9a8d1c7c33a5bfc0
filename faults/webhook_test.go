package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// webhookSecrets are the credentials the webhook URL carries (a password,
// a key in the path, a token in the query); none may reach an error, a
// delivery record or the agent's notification.
var webhookSecrets = []string{"pa55word", "k3y-in-path", "t0ken"}

// flakyWebhook is a webhook receiver whose answer the test chooses: a
// redirect to elsewhere, a hang, a 500, or (once healed) a 200. It counts
// what reached it and what reached elsewhere.
type flakyWebhook struct {
	mu        sync.Mutex
	behaviour string // "301".."308", "hang", "500", "ok"
	hits      int
	bodies    []string
	elsewhere int // requests that reached the redirect's target
	release   chan struct{}
	srv, away *httptest.Server
}

func newFlakyWebhook(t *testing.T, behaviour string) *flakyWebhook {
	w := &flakyWebhook{behaviour: behaviour, release: make(chan struct{})}
	w.away = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.elsewhere++
		w.mu.Unlock()
	}))
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.hits++
		w.bodies = append(w.bodies, string(body))
		b := w.behaviour
		w.mu.Unlock()
		switch b {
		case "hang":
			<-w.release
		case "500":
			http.Error(rw, "the receiver is down", http.StatusInternalServerError)
		case "ok":
			io.WriteString(rw, `{"ok":true,"platform_message_id":"P-1"}`)
		default:
			var code int
			fmt.Sscan(b, &code)
			http.Redirect(rw, r, w.away.URL+"/collect?token=t0ken", code)
		}
	}))
	t.Cleanup(func() {
		close(w.release)
		w.srv.Close()
		w.away.Close()
	})
	return w
}

// url is the receiver's address with credentials in every part.
func (w *flakyWebhook) url() string {
	u, _ := url.Parse(w.srv.URL)
	u.User = url.UserPassword("hook", "pa55word")
	u.Path = "/hook/k3y-in-path"
	u.RawQuery = "token=t0ken"
	return u.String()
}

func (w *flakyWebhook) counts() (hits, elsewhere int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hits, w.elsewhere
}

func (w *flakyWebhook) set(behaviour string) {
	w.mu.Lock()
	w.behaviour = behaviour
	w.mu.Unlock()
}

// TestWebhookFaults delivers one agent message through the host's webhook
// deliverer to a receiver that redirects (301, 302, 307, 308), hangs past
// a short timeout, or answers 500. Each time: the message is never
// recorded as delivered and never reaches the redirect's target; it is
// retried only after its back-off, fails after the host's attempts with a
// notification to the agent naming the cause; no credential of the URL is
// written anywhere; and once the receiver heals, a requeue delivers the
// same message (nothing was lost).
func TestWebhookFaults(t *testing.T) {
	for _, behaviour := range []string{"301", "302", "307", "308", "hang", "500"} {
		t.Run(behaviour, func(t *testing.T) {
			ctx := context.Background()
			clk := testkit.NewClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			root := filepath.Join(t.TempDir(), "data")
			h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}, Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			ref := mailbox.SessionRef{AgentGroupID: "ag", SessionID: "s1"}
			if err := h.InitSession(ctx, ref); err != nil {
				t.Fatal(err)
			}
			content, _ := mailbox.MarshalContent(map[string]string{"sender": "u", "senderId": "u1", "text": "hello"})
			if _, _, err := h.Enqueue(ctx, ref, mailbox.InboundMessage{ID: "in-1", Kind: mailbox.KindChat, Content: content,
				Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}}); err != nil {
				t.Fatal(err)
			}
			dir, _ := h.Layout().SessionDir(ref)
			agent, err := mailbox.OpenAgent(ctx, dir, mailbox.AgentOptions{Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close()
			answer, _ := mailbox.MarshalContent(map[string]string{"text": "the answer"})
			if _, err := agent.Send(ctx, mailbox.OutboundMessage{ID: "out-1", Content: answer, InReplyTo: "in-1",
				Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}}); err != nil {
				t.Fatal(err)
			}

			hook := newFlakyWebhook(t, behaviour)
			d, err := hostd.NewWebhookDeliverer(hook.url())
			if err != nil {
				t.Fatal(err)
			}
			d.Timeout = 30 * time.Second
			if behaviour == "hang" {
				d.Timeout = 200 * time.Millisecond // the hang is cut here
			}
			attempts := mailbox.DefaultMaxDeliveryAttempts
			for i := 1; i <= attempts; i++ {
				res, err := h.Drain(ctx, ref, d)
				if err != nil {
					t.Fatalf("drain %d: %v", i, err)
				}
				if res.Delivered != 0 || (i < attempts && res.Retrying != 1) || (i == attempts && res.Failed != 1) {
					t.Fatalf("drain %d: %+v; want a retry, then a failure at attempt %d", i, res, attempts)
				}
				// Before its back-off has passed the message is not sent again.
				before, _ := hook.counts()
				if _, err := h.Drain(ctx, ref, d); err != nil {
					t.Fatal(err)
				}
				if after, _ := hook.counts(); after != before {
					t.Fatalf("attempt %d was retried at once, without back-off", i)
				}
				clk.Advance(time.Hour)
			}
			hits, elsewhere := hook.counts()
			if hits != attempts || elsewhere != 0 {
				t.Fatalf("receiver hit %d times (want %d), redirect target %d times (want 0)", hits, attempts, elsewhere)
			}

			inbound := filepath.Join(dir, mailbox.InboundFile)
			rows := sqlitetest.QueryFile(t, inbound, "SELECT d.status, a.attempts, a.last_error FROM delivered d JOIN delivery_attempts a ON a.message_out_id = d.message_out_id WHERE d.message_out_id = 'out-1'")
			if len(rows) != 1 || rows[0][0] != "failed" || rows[0][1] != int64(attempts) {
				t.Fatalf("delivery record %v; want failed after %d attempts", rows, attempts)
			}
			lastError, _ := rows[0][2].(string)
			want := map[string]string{"hang": "deadline", "500": "500"}[behaviour]
			if want == "" {
				want = "redirect"
			}
			if !strings.Contains(lastError, want) {
				t.Errorf("last error %q does not say %q", lastError, want)
			}
			notes := sqlitetest.QueryFile(t, inbound, "SELECT content FROM messages_in WHERE id <> 'in-1'")
			if len(notes) != 1 || !strings.Contains(fmt.Sprint(notes[0][0]), "Delivery failed") {
				t.Fatalf("the agent was not told: %v", notes)
			}
			for _, s := range webhookSecrets {
				if strings.Contains(lastError, s) || strings.Contains(fmt.Sprint(notes[0][0]), s) {
					t.Errorf("a credential (%s) was written: %q / %v", s, lastError, notes[0][0])
				}
			}

			// Nothing lost: the agent's row is intact, and once the
			// receiver works a requeue delivers it.
			if got := sqlitetest.QueryFile(t, filepath.Join(dir, mailbox.OutboundFile), "SELECT content FROM messages_out WHERE id = 'out-1'"); len(got) != 1 {
				t.Fatalf("the outbound row is gone: %v", got)
			}
			hook.set("ok")
			if _, err := h.Requeue(ctx, ref, []string{"out-1"}); err != nil {
				t.Fatal(err)
			}
			res, err := h.Drain(ctx, ref, d)
			if err != nil || res.Delivered != 1 {
				t.Fatalf("drain after requeue: %+v, %v", res, err)
			}
			hook.mu.Lock()
			last := hook.bodies[len(hook.bodies)-1]
			hook.mu.Unlock()
			var env struct {
				ID      string          `json:"id"`
				Content json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal([]byte(last), &env); err != nil || env.ID != "out-1" || !strings.Contains(string(env.Content), "the answer") {
				t.Fatalf("delivered %q (%v); want out-1 with its content", last, err)
			}
		})
	}
}
