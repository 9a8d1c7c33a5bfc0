package http

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/mailbox"
)

// HostMetrics is the host daemon's Prometheus metrics (`sessiondb host
// --listen` serves them at /metrics): it is the daemon's hostd.Observer,
// counting in a registry of its own. Queue depth and stuck sessions are
// what the last sweep of each session saw.
type HostMetrics struct {
	reg        *prometheus.Registry
	appends    prometheus.Counter
	events     *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	failures   *prometheus.CounterVec
	stuckStops prometheus.Counter

	mu    sync.Mutex
	due   map[mailbox.SessionRef]int
	stuck map[mailbox.SessionRef]bool
}

var _ hostd.Observer = (*HostMetrics)(nil)

// NewHostMetrics returns the metrics with every series at zero.
func NewHostMetrics() *HostMetrics {
	m := &HostMetrics{reg: prometheus.NewRegistry(), due: map[mailbox.SessionRef]int{}, stuck: map[mailbox.SessionRef]bool{}}
	m.appends = prometheus.NewCounter(prometheus.CounterOpts{Name: "sessiondb_host_appends_total",
		Help: "Inbound rows the router appended to session mailboxes (redelivered events not counted)."})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sessiondb_host_events_total",
		Help: "Inbound events through the endpoint, by outcome (routed, duplicate, dropped, ignored, error)."}, []string{"outcome"})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sessiondb_host_deliveries_total",
		Help: "Outbound rows handled by drains, by result (delivered, failed, retrying, deferred)."}, []string{"result"})
	m.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sessiondb_host_failures_total",
		Help: "Sweeps and drains of a session that failed (the session is backed off), by stage."}, []string{"stage"})
	m.stuckStops = prometheus.NewCounter(prometheus.CounterOpts{Name: "sessiondb_host_stuck_stops_total",
		Help: "Containers stopped as stuck."})
	for _, r := range []string{"delivered", "failed", "retrying", "deferred"} {
		m.deliveries.WithLabelValues(r)
	}
	for _, s := range []string{"sweep", "drain"} {
		m.failures.WithLabelValues(s)
	}
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sessiondb_host_due_messages",
		Help: "Inbound rows due for agents (queue depth), as the last sweep of each session saw."}, func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		n := 0
		for _, d := range m.due {
			n += d
		}
		return float64(n)
	})
	stuck := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sessiondb_host_stuck_sessions",
		Help: "Sessions whose container the last sweep stopped as stuck."}, func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		return float64(len(m.stuck))
	})
	m.reg.MustRegister(m.appends, m.events, m.deliveries, m.failures, m.stuckStops, depth, stuck,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *HostMetrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Swept implements hostd.Observer.
func (m *HostMetrics) Swept(ref mailbox.SessionRef, due int, stuckStopped bool, err error) {
	if err != nil {
		m.failures.WithLabelValues("sweep").Inc()
		return
	}
	if stuckStopped {
		m.stuckStops.Inc()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.due[ref] = due
	if stuckStopped {
		m.stuck[ref] = true
	} else {
		delete(m.stuck, ref)
	}
}

// Drained implements hostd.Observer.
func (m *HostMetrics) Drained(_ mailbox.SessionRef, res mailbox.DrainResult, err error) {
	if err != nil {
		m.failures.WithLabelValues("drain").Inc()
		return
	}
	m.deliveries.WithLabelValues("delivered").Add(float64(res.Delivered))
	m.deliveries.WithLabelValues("failed").Add(float64(res.Failed))
	m.deliveries.WithLabelValues("retrying").Add(float64(res.Retrying))
	m.deliveries.WithLabelValues("deferred").Add(float64(res.Deferred))
}

// Routed implements hostd.Observer.
func (m *HostMetrics) Routed(res hostd.RouteResult, err error) {
	outcome := res.Outcome
	if err != nil || outcome == "" {
		outcome = "error"
		if c := sessiondb.ErrorCode(err); c == sessiondb.EINVALID {
			outcome = "invalid"
		}
	}
	m.events.WithLabelValues(outcome).Inc()
	for _, d := range res.Deliveries {
		if d.Written {
			m.appends.Inc()
		}
	}
}
