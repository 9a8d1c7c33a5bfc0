package hostd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/mailbox"
)

// DefaultWebhookTimeout bounds one webhook request.
const DefaultWebhookTimeout = 10 * time.Second

// WebhookDeliverer delivers each outbound row as an HTTP POST of its
// DeliveryEnvelope (Content-Type application/json) to URL.
//
// A 2xx status is delivered; a JSON body's "platform_message_id" is
// recorded (an empty or non-JSON body records none), and a 2xx body of
// {"ok":false,...} is a refusal like the exec deliverer's. 4xx other than
// 408 and 429 is a permanent failure (the row fails at once and the agent is
// told); 408, 429, 5xx, timeouts and connection errors are retried with
// back-off.
//
// Redirects are not followed: a 3xx is a failure, retried like a 5xx and
// finally reported to the agent like any other. Following one would re-post
// the message (307, 308) to a host nobody configured, with the original URL
// in Referer, or turn the POST into a GET without the message (301, 302,
// 303) that a 2xx then records as delivered.
//
// URL may carry credentials (user info, a token in the query or the path):
// errors, and so the logs, status file and failure reports built from them,
// name it by scheme and host only (errtext.RedactURL).
type WebhookDeliverer struct {
	URL string
	// Client sends the requests; nil means a client with Timeout.
	Client *http.Client
	// Timeout bounds one request; default DefaultWebhookTimeout.
	Timeout time.Duration
	// Header is added to every request (e.g. Authorization).
	Header http.Header
}

// NewWebhookDeliverer checks rawURL (absolute http or https) and returns a
// deliverer posting to it.
func NewWebhookDeliverer(rawURL string) (*WebhookDeliverer, error) {
	if err := checkWebhookURL(rawURL, "webhook deliverer"); err != nil {
		return nil, err
	}
	return &WebhookDeliverer{URL: rawURL}, nil
}

// checkWebhookURL refuses a URL that is not absolute http or https; the
// error is invalid, names the hook (who), and shows the URL by scheme and
// host only.
func checkWebhookURL(rawURL, who string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s: the URL does not parse: %v", who, urlCause(err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s: the URL must be absolute http:// or https://, got %s", who, errtext.RedactURL(rawURL))
	}
	return nil
}

// Deliver posts row; see WebhookDeliverer.
func (d *WebhookDeliverer) Deliver(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
	body, err := encodeEnvelope(ref, row)
	if err != nil {
		return "", err
	}
	timeout := positiveOr(d.Timeout, DefaultWebhookTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return "", mailbox.Permanent(sessiondb.Errorf(sessiondb.EINVALID, "webhook deliverer: build the request to %s: %v", errtext.RedactURL(d.URL), urlCause(err)))
	}
	for k, vs := range d.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", ref.String()+"/"+row.ID)
	target := errtext.RedactURL(d.URL)
	resp, err := noRedirects(d.Client, timeout).Do(req)
	if err != nil {
		return "", sessiondb.Errorf(sessiondb.EINTERNAL, "webhook deliverer: POST %s: %v", target, urlCause(err))
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		reply, found, err := parseReply(rb)
		if !found || err != nil {
			// A 2xx is the receiver's word that it took the message; an
			// unreadable body must not make us send it again.
			return "", nil
		}
		if reply.OK != nil && !*reply.OK {
			return "", replyError(reply, "webhook")
		}
		return reply.PlatformMessageID, nil
	case code >= 300 && code < 400:
		to := ""
		if loc := resp.Header.Get("Location"); loc != "" {
			to = " to " + errtext.RedactURL(resp.Request.URL.ResolveReference(parseOrEmpty(loc)).String())
		}
		return "", sessiondb.Errorf(sessiondb.EINTERNAL, "webhook %s answered %s, a redirect%s: redirects are not followed (point the deliverer at the final URL)", target, resp.Status, to)
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return "", sessiondb.Errorf(sessiondb.EINTERNAL, "webhook answered %s%s", resp.Status, bodyHint(rb))
	case code >= 400:
		return "", mailbox.Permanent(sessiondb.Errorf(sessiondb.EINTERNAL, "webhook refused the message: %s%s", resp.Status, bodyHint(rb)))
	default:
		return "", sessiondb.Errorf(sessiondb.EINTERNAL, "webhook answered %s", resp.Status)
	}
}

// noRedirects is a copy of c (nil: a client with timeout) that follows no
// redirect: a 3xx is answered as it is (see WebhookDeliverer), and the
// caller's client keeps its own policy.
func noRedirects(c *http.Client, timeout time.Duration) *http.Client {
	client := &http.Client{Timeout: timeout}
	if c != nil {
		*client = *c
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return client
}

// urlCause drops the *url.Error around err: its message quotes the whole
// URL, credentials included, where only the cause is wanted.
func urlCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// parseOrEmpty parses a Location header; an unparsable one resolves to the
// request's own URL.
func parseOrEmpty(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		return &url.URL{}
	}
	return u
}

func bodyHint(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	if r, found, err := parseReply(b); found && err == nil && r.Error != "" {
		s = r.Error
	}
	return fmt.Sprintf(": %s", errtext.Clip(strings.ReplaceAll(s, "\n", " "), 200))
}
