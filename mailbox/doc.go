// Package mailbox implements the per-session mailbox folder shared between a
// host and an agent container: inbound.db (host writes, agent reads
// read-only), outbound.db (agent writes, host reads read-only), .heartbeat,
// inbox/ and outbox/. The files keep NanoClaw's contract byte for byte
// (tables, columns, values, timestamp forms, compact JSON), so NanoClaw's
// container can run against our Host and our Agent under NanoClaw's host.
//
// Host is the host side (one per data root, safe for concurrent use); Agent
// is the container side (one per session folder). Both take their clock from
// their options so tests can set the time. Errors carry a sessiondb code:
// invalid, not_found, conflict, busy or internal.
//
// The files are always in rollback-journal (DELETE) mode, never WAL: WAL's
// shared-memory index does not cross a container mount, and a reader on the
// far side would freeze on an old snapshot.
//
// The daemon that runs a Host over every session folder (sweep, delivery
// workers, back-off, wake) is package hostd; by hand, a host does:
//
//	h, _ := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}, Location: zone})
//	h.InitSession(ctx, ref)                       // once per new session
//	h.RecoverInbound(ctx, ref)                    // at start, per active session
//	h.Enqueue(ctx, ref, msg)                      // on every inbound event
//	h.PrepareSpawn(ctx, ref, spawn)               // before each container start
//	h.Drain(ctx, ref, deliverer)                  // on outbound change (Watcher; DrainWith's
//	                                              // Read drops the wakes its read saw)
//	h.CheckSession(ctx, ref, running)             // every tick: acks, due work, claims
//	h.Upkeep(ctx, ref)                            // every tick: recurrences, expiry
//
// and an agent:
//
//	a, _ := mailbox.OpenAgent(ctx, "/workspace", mailbox.AgentOptions{Provider: "claude"})
//	a.ClearStaleProcessing(ctx)
//	for first := true; ; first = false {
//		batch, _ := a.Poll(ctx, mailbox.PollOptions{FirstPoll: first})
//		if len(batch) == 0 { a.WaitInbound(ctx); continue }
//		a.MarkProcessing(ctx, ids...) // the claim, before the model call
//		reply.Complete = ids          // the batch completes with its last reply, in one commit
//		a.Send(ctx, reply)            // (a batch that answers nothing: a.MarkCompleted(ctx, ids...))
//	}
package mailbox
