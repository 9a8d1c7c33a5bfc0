package hostd

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/mailbox"
)

// secretURL is srv's URL with a password, a token in the query and a key
// in the path, all of which must stay out of every error.
func secretURL(srv *httptest.Server) string {
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("hook", "pa55word")
	u.Path = "/hook/k3y-in-path"
	u.RawQuery = "token=t0ken"
	return u.String()
}

// assertNoSecret fails when text quotes any credential of secretURL.
func assertNoSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range []string{"pa55word", "t0ken", "k3y-in-path"} {
		if strings.Contains(text, s) {
			t.Errorf("%s quotes a credential (%s): %s", what, s, text)
		}
	}
}

// TestWebhookRedirectIsAFailure: every redirect status is a failure that
// is retried, nothing reaches the host it points to, and the error names
// neither URL's credentials. A caller's own client is not made to follow
// either.
func TestWebhookRedirectIsAFailure(t *testing.T) {
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer other.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		for _, own := range []bool{false, true} {
			name := http.StatusText(code)
			if own {
				name += " with the caller's client"
			}
			t.Run(name, func(t *testing.T) {
				var hits atomic.Int32
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					hits.Add(1)
					io.Copy(io.Discard, r.Body)
					http.Redirect(w, r, other.URL+"/steal?token=t0ken", code)
				}))
				defer srv.Close()
				d, err := NewWebhookDeliverer(secretURL(srv))
				if err != nil {
					t.Fatal(err)
				}
				d.Timeout = 30 * time.Second
				if own {
					d.Client = &http.Client{}
				}
				pid, err := d.Deliver(ctxb, ref, testOutRow())
				checkDelivery(t, pid, err, "", "redirect", false)
				assertNoSecret(t, "the error", err.Error())
				if !strings.Contains(err.Error(), other.URL) || !strings.Contains(err.Error(), http.StatusText(code)) {
					t.Errorf("the error does not say where it was sent: %v", err)
				}
				if hits.Load() != 1 || elsewhere.Load() != 0 {
					t.Errorf("webhook hit %d times, redirect target %d times; want 1 and 0", hits.Load(), elsewhere.Load())
				}
				if d.Client != nil && d.Client.CheckRedirect != nil {
					t.Errorf("the caller's client was changed")
				}
			})
		}
	}
}

// TestWebhookErrorsHideCredentials: a connection that fails, a timeout and
// a URL refused at construction name the webhook by scheme and host only.
func TestWebhookErrorsHideCredentials(t *testing.T) {
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	raw := secretURL(srv)
	srv.Close() // nothing listens there any more
	d, err := NewWebhookDeliverer(raw)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Deliver(ctxb, ref, testOutRow())
	checkDelivery(t, "", err, "", "POST", false)
	assertNoSecret(t, "a refused connection", err.Error())
	for _, bad := range []string{"ftp://hook:pa55word@example.com/k3y-in-path?token=t0ken", "http://hook:pa55word@[::1/k3y-in-path?token=t0ken", "/k3y-in-path?token=t0ken"} {
		_, err := NewWebhookDeliverer(bad)
		if err == nil {
			t.Fatalf("NewWebhookDeliverer(%q) accepted it", bad)
		}
		assertNoSecret(t, "a refused URL", err.Error())
	}
}
