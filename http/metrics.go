package http

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are one server's Prometheus collectors, in a registry of its
// own (never the package-level default): two servers in one process, as in
// tests, count apart.
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	searches   prometheus.Counter
	liveEvents *prometheus.CounterVec
	liveConns  prometheus.Gauge
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sessiondb_http_requests_total",
		Help: "HTTP requests answered, by route pattern, method and status code.",
	}, []string{"route", "method", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sessiondb_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request (to the end of the body; live streams are left out), by route pattern.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"route", "method"})
	m.searches = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sessiondb_searches_total",
		Help: "Full-text searches run (API and MCP).",
	})
	m.liveEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sessiondb_live_events_total",
		Help: "Server-Sent Events sent, by stream.",
	}, []string{"stream"})
	m.liveConns = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sessiondb_live_streams",
		Help: "Server-Sent Event streams open now.",
	})
	m.reg.MustRegister(m.requests, m.latency, m.searches, m.liveEvents, m.liveConns,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if s.cfg.Mailboxes != nil {
		m.reg.MustRegister(&mailboxCollector{s: s})
	}
	return m
}

// handler serves the registry in Prometheus' text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// instrument counts and times the requests of one route. Streams (SSE,
// exports) are counted but not timed: their length is the client's.
func (m *metrics) instrument(route string, stream bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		method := methodLabel(r.Method)
		m.requests.WithLabelValues(route, method, codeLabel(sw.status)).Inc()
		if !stream {
			m.latency.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		}
	})
}

// methodLabel is the method label of a request: one of the methods HTTP
// defines, else "other". The method is the client's to choose (any token
// goes), and every label value is a series the registry keeps for ever:
// made-up methods would grow it without bound. The route label is the
// pattern a route was registered under, and the status one a handler
// wrote, both from fixed sets.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// codeLabel is the status label: the code a handler wrote, or "other"
// for one outside 100-599 (which net/http itself would refuse to send).
func codeLabel(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status)
}

// statusWriter remembers the status a handler wrote. Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type statusWriter struct {
	http.ResponseWriter
	status  int
	written bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.written {
		w.status, w.written = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.written = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes on, for streams.
func (w *statusWriter) Flush() {
	w.written = true
	http.NewResponseController(w.ResponseWriter).Flush()
}
