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
package mailbox
