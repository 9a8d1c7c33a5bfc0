package http_test

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/hostd"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/mailbox"
)

// The host's metrics count what the daemon's observer hears: appended
// rows (not redeliveries), events by outcome, deliveries by result,
// failures by stage, and the last sweep's queue depth and stuck sessions.
func TestHostMetricsCount(t *testing.T) {
	m := sdbhttp.NewHostMetrics()
	a, b := mailbox.SessionRef{AgentGroupID: "g", SessionID: "a"}, mailbox.SessionRef{AgentGroupID: "g", SessionID: "b"}
	m.Routed(hostd.RouteResult{Outcome: "routed", Deliveries: []hostd.Delivery{{InboundID: "e1:c:g", Written: true}, {InboundID: "e1:c:h", Duplicate: true}, {Outcome: "dropped"}}}, nil)
	m.Routed(hostd.RouteResult{}, sessiondb.Errorf(sessiondb.EINVALID, "bad event"))
	m.Drained(a, mailbox.DrainResult{Delivered: 2, Failed: 1, Retrying: 3}, nil)
	m.Drained(b, mailbox.DrainResult{}, errors.New("disk"))
	m.Swept(a, 4, false, nil)
	m.Swept(b, 1, true, nil)
	m.Swept(b, 0, false, errors.New("locked"))
	m.Swept(a, 2, false, nil)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		"sessiondb_host_appends_total 1",
		`sessiondb_host_events_total{outcome="routed"} 1`,
		`sessiondb_host_events_total{outcome="invalid"} 1`,
		`sessiondb_host_deliveries_total{result="delivered"} 2`,
		`sessiondb_host_deliveries_total{result="failed"} 1`,
		`sessiondb_host_deliveries_total{result="retrying"} 3`,
		`sessiondb_host_failures_total{stage="drain"} 1`,
		`sessiondb_host_failures_total{stage="sweep"} 1`,
		"sessiondb_host_stuck_stops_total 1",
		"sessiondb_host_stuck_sessions 1",
		"sessiondb_host_due_messages 3",
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(body, "sessiondb_host"))
		}
	}
}
