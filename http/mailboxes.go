package http

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sessiondb/sessiondb/mailbox"
)

// mailboxCollector reports the mailboxes' state at each scrape: due
// inbound rows (queue depth), stuck sessions, and outbound rows
// undelivered and failed. It reads every session's files, so it is only
// registered when the server serves mailboxes.
type mailboxCollector struct{ s *Server }

var (
	descQueueDepth = prometheus.NewDesc("sessiondb_mailbox_due_messages",
		"Inbound rows due for the agent (pending, trigger set, not scheduled ahead), over every session.", nil, nil)
	descStuck = prometheus.NewDesc("sessiondb_mailbox_stuck_sessions",
		"Sessions the host would find stuck were their container running.", nil, nil)
	descOutbound = prometheus.NewDesc("sessiondb_mailbox_outbound_messages",
		"Outbound rows by delivery state (undelivered, retrying, failed), over every session.", []string{"state"}, nil)
	descSessions = prometheus.NewDesc("sessiondb_mailbox_sessions",
		"Session mailboxes under the data root.", nil, nil)
)

func (c *mailboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descQueueDepth
	ch <- descStuck
	ch <- descOutbound
	ch <- descSessions
}

func (c *mailboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := c.s.cfg.Mailboxes
	refs, err := h.Sessions(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descSessions, err)
		return
	}
	var due, stuck, undelivered, retrying, failed int
	for _, ref := range refs {
		st, err := h.Status(ctx, ref)
		if err != nil {
			continue
		}
		due += st.Due
		if st.Stuck != mailbox.StuckOK.String() {
			stuck++
		}
		undelivered += st.OutUndelivered
		retrying += st.OutRetrying
		failed += st.OutFailed
	}
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(len(refs)))
	ch <- prometheus.MustNewConstMetric(descQueueDepth, prometheus.GaugeValue, float64(due))
	ch <- prometheus.MustNewConstMetric(descStuck, prometheus.GaugeValue, float64(stuck))
	ch <- prometheus.MustNewConstMetric(descOutbound, prometheus.GaugeValue, float64(undelivered), "undelivered")
	ch <- prometheus.MustNewConstMetric(descOutbound, prometheus.GaugeValue, float64(retrying), "retrying")
	ch <- prometheus.MustNewConstMetric(descOutbound, prometheus.GaugeValue, float64(failed), "failed")
}
