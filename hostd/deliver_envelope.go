package hostd

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/mailbox"
)

// DeliveryEnvelope is the JSON object the exec and webhook deliverers hand
// to their target for one outbound row: the session it came from, then the
// row's own fields (id, seq, kind, routing, content, files, ...) at the top
// level. Files carry absolute paths inside the session's outbox/ folder,
// readable by a target on the same machine until the row is delivered.
// timestamp and deliver_after are in sessiondb.TimestampFormat whatever
// form the row stores (NanoClaw's agent writes datetime('now') text, ours
// writes deliver_after so), so a target reads one form.
type DeliveryEnvelope struct {
	AgentGroupID string `json:"agent_group_id"`
	SessionID    string `json:"session_id"`
	mailbox.OutboundRow
}

// NewDeliveryEnvelope builds the envelope of row from session ref.
func NewDeliveryEnvelope(ref mailbox.SessionRef, row mailbox.OutboundRow) DeliveryEnvelope {
	row.Timestamp, row.DeliverAfter = isoTime(row.Timestamp), isoTime(row.DeliverAfter)
	return DeliveryEnvelope{AgentGroupID: ref.AgentGroupID, SessionID: ref.SessionID, OutboundRow: row}
}

// encodeEnvelope is row's envelope as JSON; a row that cannot be encoded
// never will be, so the failure is permanent.
func encodeEnvelope(ref mailbox.SessionRef, row mailbox.OutboundRow) ([]byte, error) {
	b, err := json.Marshal(NewDeliveryEnvelope(ref, row))
	if err != nil {
		return nil, mailbox.Permanent(sessiondb.Wrap(sessiondb.EINVALID, err, "encode message %s", row.ID))
	}
	return b, nil
}

// isoTime renders a stored timestamp in sessiondb.TimestampFormat; text it
// cannot read is passed on as it is.
func isoTime(s string) string {
	if t, ok := sessiondb.ParseTimestamp(s); ok {
		return sessiondb.FormatTimestamp(t)
	}
	return s
}

// deliveryReply is what an exec command prints or a webhook answers:
// {"ok":true,"platform_message_id":"..."} or
// {"ok":false,"error":"...","permanent":true}.
type deliveryReply struct {
	OK                *bool  `json:"ok"`
	PlatformMessageID string `json:"platform_message_id"`
	Error             string `json:"error"`
	Permanent         bool   `json:"permanent"`
}

// parseReply reads a reply object. found is false when b holds no JSON
// object at all (an empty body, plain text).
func parseReply(b []byte) (r deliveryReply, found bool, err error) {
	s := strings.TrimSpace(string(b))
	if !strings.HasPrefix(s, "{") {
		return r, false, nil
	}
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, true, sessiondb.Errorf(sessiondb.EINVALID, "delivery reply is not valid JSON: %v", err)
	}
	return r, true, nil
}

// replyError turns an {"ok":false} reply into the error Drain records:
// permanent when the target said so.
func replyError(r deliveryReply, who string) error {
	msg := r.Error
	if msg == "" {
		msg = "no reason given"
	}
	err := sessiondb.Errorf(sessiondb.EINTERNAL, "%s refused the message: %s", who, errtext.Clip(msg, 300))
	if r.Permanent {
		return mailbox.Permanent(err)
	}
	return err
}

// NewDeliverer builds the channel deliverer a command line names:
// "exec:CMD" (ExecDeliverer, run for the sessions of layout) or
// "webhook:URL" (WebhookDeliverer); timeout bounds one delivery (0: the
// deliverer's default). Anything else is invalid, named by its kind only
// (SchemeOnly: the rest may be a secret).
func NewDeliverer(spec string, layout mailbox.Layout, timeout time.Duration) (mailbox.Deliverer, error) {
	if cmd, ok := strings.CutPrefix(spec, "exec:"); ok {
		d, err := NewExecDeliverer(cmd, layout)
		if d != nil {
			d.Timeout = timeout
		}
		return d, err
	}
	if u, ok := strings.CutPrefix(spec, "webhook:"); ok {
		d, err := NewWebhookDeliverer(u)
		if d != nil {
			d.Timeout = timeout
		}
		return d, err
	}
	return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s: want exec:CMD or webhook:URL", SchemeOnly(spec))
}

// SchemeOnly shows a deliverer or waker spec by what comes before its
// first colon: the rest may be a secret.
func SchemeOnly(spec string) string {
	scheme, _, found := strings.Cut(spec, ":")
	if !found {
		return "(no kind: prefix)"
	}
	return strconv.Quote(scheme + ":…")
}
