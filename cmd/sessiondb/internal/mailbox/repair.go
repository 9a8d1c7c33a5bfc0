package mailbox

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/mailbox"
)

// aliveWindow is how fresh a heartbeat makes the repair commands assume
// the container still runs.
const aliveWindow = 60 * time.Second

// checkDead refuses a repair that opens outbound.db read-write while the
// session's agent looks alive (fresh heartbeat), unless forced: writing
// beside a live agent would take its claims from under it.
func (m *group) checkDead(h *mailbox.Host, ref mailbox.SessionRef, force bool) error {
	if force {
		return nil
	}
	hb, err := h.Heartbeat(ref)
	if err != nil {
		return err
	}
	if !hb.IsZero() && m.Now().Sub(hb) < aliveWindow {
		return sessiondb.Errorf(sessiondb.ECONFLICT, "session %s: the agent's heartbeat is %s old, so its container may be alive; stop it first or pass --force",
			ref, ago(m.Now(), hb))
	}
	return nil
}

// repairHost is sessionHost for a repair that writes outbound.db: it also
// refuses while the agent looks alive, unless forced (checkDead).
func (m *group) repairHost(sf *sessionFlags, force bool) (*mailbox.Host, mailbox.SessionRef, error) {
	h, ref, err := m.sessionHost(sf)
	if err == nil {
		err = m.checkDead(h, ref, force)
	}
	return h, ref, err
}

// requeueCmd is `mailbox requeue`: failed rows back to pending.
func (m *group) requeueCmd() *cobra.Command {
	var sf sessionFlags
	var force bool
	c := &cobra.Command{
		Use:   "requeue [ID...] --data DIR --group G --session S",
		Short: "Put failed rows back in line (all, or the given ids)",
		Long: `requeue makes failed inbound rows pending again (tries 0, no delay) and
deletes the agent's failed acks for them so it polls them again, and makes
failed deliveries undelivered so the host sends them again. Without ids,
every failed row of the session; with ids, only those (inbound or outbound).
It writes outbound.db, so it refuses while the agent's heartbeat is fresh
unless --force.`,
		Example: `  sessiondb mailbox requeue --data /tmp/mb --group demo --session s1
  sessiondb mailbox requeue --dir /tmp/mb/demo/s1 msg-1795308931637-gf58pk --force`,
		RunE: func(c *cobra.Command, ids []string) error {
			h, ref, err := m.repairHost(&sf, force)
			if err != nil {
				return err
			}
			res, err := h.Requeue(c.Context(), ref, ids)
			if err != nil {
				return err
			}
			if m.JSON {
				return m.PrintJSON(res)
			}
			fmt.Fprintf(m.Out, "requeued %d inbound row(s) and %d delivery(ies); deleted %d failed ack(s)\n", res.Inbound, res.Outbound, res.AcksGone)
			return nil
		},
	}
	sf.add(c)
	c.Flags().BoolVar(&force, "force", false, "requeue even though the agent may be alive")
	return c
}

// recovery is what recover did.
type recovery struct {
	HotJournal bool                `json:"hot_journal"`
	Acks       mailbox.AckSync     `json:"acks"`
	Reset      mailbox.ResetResult `json:"reset"`
}

// recoverCmd is `mailbox recover`: repair a dead container's session.
func (m *group) recoverCmd() *cobra.Command {
	var sf sessionFlags
	var force bool
	c := &cobra.Command{
		Use:   "recover --data DIR --group G --session S",
		Short: "Repair a session after its container died: hot journals, orphan claims",
		Long: `recover does what the host does when a container is confirmed dead: rolls back
a journal a killed host left in inbound.db and one a killed agent left in
outbound.db (without which every read fails), mirrors the agent's finished
acks, and retries (with back-off) or fails the rows the dead agent had
claimed, deleting its processing acks. Refused while the agent's heartbeat is
fresh unless --force.`,
		Example: `  sessiondb mailbox recover --data /tmp/mb --group demo --session s1
  sessiondb mailbox recover --dir /tmp/mb/demo/s1 --force --json`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			h, ref, err := m.repairHost(&sf, force)
			if err != nil {
				return err
			}
			ctx := c.Context()
			var r recovery
			if err := h.RecoverInbound(ctx, ref); err != nil {
				return err
			}
			if r.HotJournal, err = h.RecoverHotJournal(ctx, ref); err != nil {
				return err
			}
			if r.Acks, err = h.SyncAcks(ctx, ref); err != nil {
				return err
			}
			if r.Reset, err = h.ResetProcessing(ctx, ref); err != nil {
				return err
			}
			if m.JSON {
				return m.PrintJSON(r)
			}
			j := "no hot journal"
			if r.HotJournal {
				j = "rolled back outbound.db's hot journal"
			}
			fmt.Fprintf(m.Out, "%s; synced %d completed and %d failed ack(s); claims: %d retried, %d failed for good, %d already rescheduled, %d ack(s) cleared\n",
				j, r.Acks.Completed, r.Acks.Failed, r.Reset.Retried, r.Reset.Failed, r.Reset.Skipped, r.Reset.AcksCleared)
			return nil
		},
	}
	sf.add(c)
	c.Flags().BoolVar(&force, "force", false, "recover even though the agent may be alive")
	return c
}
