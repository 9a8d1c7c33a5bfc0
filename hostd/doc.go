// Package hostd is the host daemon: it runs the host side of every session
// mailbox under one data root, through package mailbox's exported API
// (mailbox owns the folder contract and what can be done to one session;
// hostd decides when, and for which sessions).
//
// A Daemon is built from small parts, each owning one duty and its own
// bookkeeping:
//
//   - the Sweeper looks at the sessions whose files changed (all of them on a
//     full sweep): it syncs acks, wakes a session with due work, stops a stuck
//     container, resets a dead one's claims and runs the timed upkeep, backing
//     off a failing session and quarantining a corrupt one;
//   - the drainer delivers what agents wrote, one session at a time on a few
//     workers, through a HostDeliverer (host actions, agent-to-agent) in front
//     of the channel deliverer (ExecDeliverer, WebhookDeliverer);
//   - the watcher set wakes the drainer on an outbound write of a session whose
//     container runs;
//   - the status writer keeps StatusFile in the data root for other processes.
//
// The Daemon's tick drives them in order; ExecWaker starts and stops the
// session's container (`exec:` wake), HeartbeatRuntime stands in for agents
// started elsewhere.
//
//	h, _ := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}})
//	del, _ := hostd.NewWebhookDeliverer("https://example.com/hook")
//	d, _ := hostd.New(h, hostd.Config{Deliverer: del})
//	err := d.Run(ctx) // until ctx ends; then stops cleanly
package hostd
