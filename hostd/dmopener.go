package hostd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// A user's DM chat is where the host sends them approval cards (spec A6).
// On Telegram, WhatsApp, iMessage, email and Matrix it is the user's handle;
// on Discord, Slack, Teams, Webex and Google Chat it is a chat the platform
// opens (sessiondb.NeedsOpenedDM), which only the chat adapter can ask for.
// The host and `route --direct` reach the adapter through a DM opener hook,
// exec or webhook, as they reach it through a deliverer to send.

// DirectDMs is the DMOpener without a hook: a user's DM chat is their
// handle on the channels where it is, and cannot be found on those that
// need a DM opened: guessing the handle there would send cards to a chat
// that is not the user's, and the guess would be cached in user_dms, where
// NanoClaw would reuse it too.
type DirectDMs struct{}

// HasChannel reports true: every channel is reachable.
func (DirectDMs) HasChannel(string) bool { return true }

// OpenDM returns the handle itself, or refuses a channel that needs its DM
// opened, saying how to configure one.
func (DirectDMs) OpenDM(_ context.Context, channelType, handle string) (string, error) {
	if sessiondb.NeedsOpenedDM(channelType) {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "a %s DM must be opened by the platform and no DM opener is configured (--dm-opener exec:CMD or webhook:URL)", channelType)
	}
	return handle, nil
}

// DefaultDMOpenerTimeout bounds one run or request of a DM opener.
const DefaultDMOpenerTimeout = 10 * time.Second

// dmRequest is what a DM opener is given: the channel and the user's
// handle on it.
type dmRequest struct {
	ChannelType string `json:"channel_type"`
	Handle      string `json:"handle"`
}

// dmReply is what a DM opener answers: the DM chat's platform id, or why
// it could not open one.
type dmReply struct {
	PlatformID string `json:"platform_id"`
	Error      string `json:"error"`
}

// ExecDMOpener opens DMs by running Command once per DM the host has not
// cached yet, with {"channel_type","handle"} as one JSON line on its
// standard input and SESSIONDB_DM_CHANNEL and SESSIONDB_DM_HANDLE set. It
// answers with the DM chat's platform id: the last line of its standard
// output, plain (D024BE91L) or as {"platform_id":"..."}; {"error":"..."}
// or a non-zero exit says the user cannot be reached now. It is asked for
// every channel: on those whose DM chat is the handle it answers the
// handle. Runs under /bin/sh -c in its own process group, for at most
// Timeout.
type ExecDMOpener struct {
	Command string
	// Timeout bounds one run; default DefaultDMOpenerTimeout.
	Timeout time.Duration
}

// HasChannel reports true: the command is asked for every channel.
func (o *ExecDMOpener) HasChannel(string) bool { return true }

// OpenDM runs the command for (channelType, handle); see ExecDMOpener.
func (o *ExecDMOpener) OpenDM(ctx context.Context, channelType, handle string) (string, error) {
	in, err := json.Marshal(dmRequest{ChannelType: channelType, Handle: handle})
	if err != nil {
		return "", sessiondb.Wrap(sessiondb.EINTERNAL, err, "DM opener")
	}
	out, err := runHook(ctx, o.Command, append(in, '\n'), []string{"SESSIONDB_DM_CHANNEL=" + channelType, "SESSIONDB_DM_HANDLE=" + handle},
		positiveOr(o.Timeout, DefaultDMOpenerTimeout), "DM opener")
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return readDMReply([]byte(lines[len(lines)-1]), "DM opener")
}

// WebhookDMOpener opens DMs by POSTing {"channel_type","handle"}
// (application/json) to URL once per DM the host has not cached yet. A 2xx
// answer holds the DM chat's platform id, as {"platform_id":"..."} or as
// plain text; {"error":"..."}, any other status and a redirect (not
// followed) say the user cannot be reached now. It is asked for every
// channel. Errors name URL by scheme and host only.
type WebhookDMOpener struct {
	URL string
	// Client sends the requests; nil means a client with Timeout.
	Client *http.Client
	// Timeout bounds one request; default DefaultDMOpenerTimeout.
	Timeout time.Duration
}

// HasChannel reports true: the webhook is asked for every channel.
func (o *WebhookDMOpener) HasChannel(string) bool { return true }

// OpenDM asks the webhook for (channelType, handle); see WebhookDMOpener.
func (o *WebhookDMOpener) OpenDM(ctx context.Context, channelType, handle string) (string, error) {
	body, err := json.Marshal(dmRequest{ChannelType: channelType, Handle: handle})
	if err != nil {
		return "", sessiondb.Wrap(sessiondb.EINTERNAL, err, "DM opener")
	}
	timeout := positiveOr(o.Timeout, DefaultDMOpenerTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	target := errtext.RedactURL(o.URL)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(body))
	if err != nil {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "DM opener: build the request to %s: %v", target, urlCause(err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := noRedirects(o.Client, timeout).Do(req)
	if err != nil {
		return "", sessiondb.Errorf(sessiondb.EINTERNAL, "DM opener: POST %s: %v", target, urlCause(err))
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return "", sessiondb.Errorf(sessiondb.EINTERNAL, "DM opener %s answered %s%s", target, resp.Status, bodyHint(rb))
	}
	return readDMReply(rb, "DM opener "+target)
}

// readDMReply reads an opener's answer: a JSON object with platform_id or
// error, or the platform id as plain text.
func readDMReply(b []byte, who string) (string, error) {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "{") {
		var r dmReply
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			return "", sessiondb.Errorf(sessiondb.EINVALID, "%s: the answer is not valid JSON: %v", who, err)
		}
		if r.Error != "" {
			return "", sessiondb.Errorf(sessiondb.EINTERNAL, "%s: %s", who, errtext.Clip(r.Error, 300))
		}
		s = r.PlatformID
	}
	if s == "" {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "%s answered no DM chat", who)
	}
	return s, nil
}

// NewDMOpener returns the DM opener of spec: exec:CMD or webhook:URL
// (absolute http or https), each bounded by timeout (0: the default).
func NewDMOpener(spec string, timeout time.Duration) (sessiondb.DMOpener, error) {
	if cmd, ok := strings.CutPrefix(spec, "exec:"); ok {
		if strings.TrimSpace(cmd) == "" {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "DM opener: the command is empty")
		}
		return &ExecDMOpener{Command: cmd, Timeout: timeout}, nil
	}
	if raw, ok := strings.CutPrefix(spec, "webhook:"); ok {
		if err := checkWebhookURL(raw, "DM opener"); err != nil {
			return nil, err
		}
		return &WebhookDMOpener{URL: raw, Timeout: timeout}, nil
	}
	return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s: want exec:CMD or webhook:URL", SchemeOnly(spec))
}
