package hostd

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/mailbox"
)

func TestWebhookDeliverer(t *testing.T) {
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	cases := []struct {
		name      string
		status    int
		body      string
		hang      bool
		wantPID   string
		wantErr   string
		permanent bool
	}{
		{name: "200 with platform id", status: 200, body: `{"ok":true,"platform_message_id":"P-1"}`, wantPID: "P-1"},
		{name: "204 no body", status: 204},
		{name: "200 plain text body", status: 200, body: "thanks"},
		{name: "200 but refused", status: 200, body: `{"ok":false,"error":"blocked","permanent":true}`, wantErr: "blocked", permanent: true},
		{name: "400 is permanent", status: 400, body: `{"error":"bad chat"}`, wantErr: "bad chat", permanent: true},
		{name: "404 is permanent", status: 404, wantErr: "404", permanent: true},
		{name: "408 is retried", status: 408, wantErr: "408"},
		{name: "429 is retried", status: 429, wantErr: "429"},
		{name: "500 is retried", status: 500, body: "oops", wantErr: "500"},
		{name: "timeout is retried", hang: true, wantErr: "POST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []byte
			var hdr http.Header
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got, hdr = b, r.Header.Clone()
				mu.Unlock()
				if tc.hang {
					<-release
					return
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			defer close(release)
			d, err := NewWebhookDeliverer(srv.URL + "/hook")
			if err != nil {
				t.Fatal(err)
			}
			d.Timeout = 30 * time.Second
			if tc.hang {
				d.Timeout = 300 * time.Millisecond
			}
			pid, err := d.Deliver(ctxb, ref, testOutRow())
			checkDelivery(t, pid, err, tc.wantPID, tc.wantErr, tc.permanent)
			mu.Lock()
			defer mu.Unlock()
			var env DeliveryEnvelope
			if err := json.Unmarshal(got, &env); err != nil {
				t.Fatalf("body %q: %v", got, err)
			}
			if env.ID != "out-1" || env.SessionID != "sess-1" || string(env.Content) != `{"text":"hi"}` {
				t.Fatalf("envelope %+v", env)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if k := hdr.Get("Idempotency-Key"); k != "ag-1/sess-1/out-1" {
				t.Fatalf("Idempotency-Key %q", k)
			}
		})
	}
}
