package mailbox

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/mailbox"
)

// initCmd is `mailbox init`: create a session folder.
func (m *group) initCmd() *cobra.Command {
	var sf sessionFlags
	c := &cobra.Command{
		Use:   "init --data DIR --group G --session S",
		Short: "Create a session mailbox folder (idempotent)",
		Long: `init creates <data>/<group>/<session>/ with inbox/, outbox/ and both mailbox
files in NanoClaw's layout and schema, and prints the folder. Running it again
changes nothing but bringing an older inbound.db up to date. A host daemon
running on the data root picks the session up once both files are whole.`,
		Example: `  sessiondb mailbox init --data /tmp/mb --group demo --session s1
  sessiondb mailbox init --data /tmp/mb --group demo --session s1 --json`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			root, ref, err := sf.resolve(false)
			if err != nil {
				return err
			}
			h, err := m.host(root)
			if err != nil {
				return err
			}
			if err := h.InitSession(c.Context(), ref); err != nil {
				return err
			}
			dir, _ := h.Layout().SessionDir(ref)
			if m.JSON {
				return m.PrintJSON(map[string]any{"session": ref, "dir": dir})
			}
			fmt.Fprintln(m.Out, cli.PrintableLine(dir))
			return nil
		},
	}
	sf.add(c)
	return c
}

// sendCmd is `mailbox send`: enqueue an inbound message or a task.
func (m *group) sendCmd() *cobra.Command {
	var (
		sf                        sessionFlags
		mf                        messageFlags
		sender, senderID, at      string
		prompt, script, every     string
		contextOnly, onWake, task bool
	)
	c := &cobra.Command{
		Use:   "send (--text T | --content JSON | --task --prompt P [--every CRON]) [flags]",
		Short: "Enqueue a chat message, a task or a recurring task into a session's inbound.db",
		Long: `send enqueues one inbound row, as the host does when a message arrives:
  --text T            a chat message {"sender","senderId","text"}: --sender is
                      the name shown to the agent, --sender-id the platform's
                      user id (default: the same as --sender)
  --content JSON      any content object, with --kind (chat, chat-sdk, task, webhook, system)
  --task --prompt P   a scheduled task {prompt, script}: --at for the first run,
                      --every CRON to repeat (in the host's --tz)
--context-only stores the row as context that does not wake the agent;
--on-wake makes it visible only to a fresh container's first poll (a note
for the next start). Re-sending an existing --id inserts nothing and prints
the existing seq.`,
		Example: `  sessiondb mailbox send --data /tmp/mb --group demo --session s1 --text "hello there" --channel-type cli --platform-id me
  sessiondb mailbox send --dir /tmp/mb/demo/s1 --text "hi" --sender "Ada Lovelace" --sender-id U024BE7LH
  sessiondb mailbox send --dir /tmp/mb/demo/s1 --text "earlier messages follow" --context-only
  sessiondb mailbox send --dir /tmp/mb/demo/s1 --text "you were restarted" --on-wake
  sessiondb mailbox send --dir /tmp/mb/demo/s1 --task --prompt "Summarize the day" --at +1h --every "0 18 * * 1-5"`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			h, ref, err := m.sessionHost(&sf)
			if err != nil {
				return err
			}
			now := m.Now()
			routing := mf.routing()
			var when time.Time
			if at != "" {
				if when, err = parseWhen("at", at, now); err != nil {
					return err
				}
			}
			if task {
				if mf.text != "" || mf.content != "" {
					return sessiondb.Errorf(sessiondb.EINVALID, "--task takes --prompt (and --script), not --text or --content")
				}
				if prompt == "" {
					return sessiondb.Errorf(sessiondb.EINVALID, "--task needs --prompt")
				}
				if contextOnly || onWake {
					return sessiondb.Errorf(sessiondb.EINVALID, "--context-only and --on-wake are for messages, not --task")
				}
				t := mailbox.Task{ID: mf.id, Prompt: prompt, ProcessAfter: when, Recurrence: every, Routing: routing}
				if c.Flags().Changed("script") {
					t.Script = &script
				}
				tid, seq, err := h.EnqueueTask(c.Context(), ref, t)
				if err != nil {
					return err
				}
				return m.printSent(tid, seq, true)
			}
			if every != "" || prompt != "" || c.Flags().Changed("script") {
				return sessiondb.Errorf(sessiondb.EINVALID, "--prompt, --script and --every need --task")
			}
			if senderID == "" {
				senderID = sender
			}
			raw, err := mf.body(map[string]string{"sender": sender, "senderId": senderID, "text": mf.text}, "--text, --content or --task --prompt")
			if err != nil {
				return err
			}
			id := mf.newID(now)
			seq, inserted, err := h.Enqueue(c.Context(), ref, mailbox.InboundMessage{ID: id, Kind: mf.kind, Content: raw,
				Routing: routing, ProcessAfter: when, Recurrence: every, ContextOnly: contextOnly, OnWake: onWake})
			if err != nil {
				return err
			}
			return m.printSent(id, seq, inserted)
		},
	}
	sf.add(c)
	mf.add(c, "message id (default msg-<ms>-<random>); must be a safe name", "message kind: chat, chat-sdk, task, webhook, system")
	f := c.Flags()
	f.StringVar(&sender, "sender", "cli", "sender name for --text")
	f.StringVar(&senderID, "sender-id", "", "sender's platform user id for --text (default: --sender)")
	f.StringVar(&at, "at", "", "process after this time (RFC 3339) or duration from now (+10m)")
	f.BoolVar(&contextOnly, "context-only", false, "store trigger=0: rides along as context, does not wake the agent")
	f.BoolVar(&onWake, "on-wake", false, "store on_wake=1: only a fresh container's first poll sees it")
	f.BoolVar(&task, "task", false, "enqueue a scheduled task (kind task)")
	f.StringVar(&prompt, "prompt", "", "task prompt")
	f.StringVar(&script, "script", "", "task pre-script (bash)")
	f.StringVar(&every, "every", "", "cron expression repeating the task, e.g. '0 9 * * 1-5'")
	return c
}

func (m *group) printSent(id string, seq int64, inserted bool) error {
	if m.JSON {
		return m.PrintJSON(map[string]any{"id": id, "seq": seq, "inserted": inserted})
	}
	if !inserted {
		fmt.Fprintf(m.Out, "%s already queued as seq %d\n", cli.PrintableLine(id), seq)
		return nil
	}
	fmt.Fprintf(m.Out, "queued %s as seq %d\n", cli.PrintableLine(id), seq)
	return nil
}

// lsCmd is `mailbox ls`: one session's rows.
func (m *group) lsCmd() *cobra.Command {
	var sf sessionFlags
	var limit int
	var state string
	c := &cobra.Command{
		Use:   "ls --data DIR --group G --session S",
		Short: "List one session's inbound and outbound rows with their states",
		Long: `ls lists a session's rows, newest first. Inbound states: pending, processing
(claimed by the agent), scheduled (process_after ahead), completed, failed,
paused. Outbound states: undelivered, retrying, delivered, failed.`,
		Example: `  sessiondb mailbox ls --data /tmp/mb --group demo --session s1
  sessiondb mailbox ls --dir /tmp/mb/demo/s1 --state failed
  sessiondb mailbox ls --dir /tmp/mb/demo/s1 --json | jq '.outbound[] | {seq, state: .delivery.status}'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if limit < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--limit must be ≥ 0 (0 = all)")
			}
			h, ref, err := m.sessionHost(&sf)
			if err != nil {
				return err
			}
			ins, outs, err := h.Inspect(c.Context(), ref, limit)
			if err != nil {
				return err
			}
			if state != "" {
				ins2, outs2 := ins[:0], outs[:0]
				for _, r := range ins {
					if r.State == state {
						ins2 = append(ins2, r)
					}
				}
				for _, r := range outs {
					if r.Delivery.Status == state {
						outs2 = append(outs2, r)
					}
				}
				ins, outs = ins2, outs2
			}
			if m.JSON {
				return m.PrintJSON(map[string]any{"session": ref, "inbound": ins, "outbound": outs})
			}
			m.Printf("INBOUND\n")
			var in cli.Table
			in.Row("SEQ", "ID", "KIND", "STATE", "TRIES", "PROCESS AFTER", "CONTENT")
			for _, r := range ins {
				in.Row(strconv.FormatInt(r.Seq, 10), r.ID, r.Kind, r.State, strconv.Itoa(r.Tries), cli.OrDash(r.ProcessAfter), summarize(r.Content, 60))
			}
			if err := in.Write(m.Out); err != nil {
				return err
			}
			m.Printf("\nOUTBOUND\n")
			var out cli.Table
			out.Row("SEQ", "ID", "KIND", "STATE", "TO", "CONTENT")
			for _, r := range outs {
				st := r.Delivery.Status
				if r.Delivery.Attempts > 0 && st != mailbox.DeliveredOK {
					st += fmt.Sprintf(" (%d tries: %s)", r.Delivery.Attempts, cli.Cut(r.Delivery.LastError, 40))
				}
				to := strings.Trim(r.Routing.ChannelType+":"+r.Routing.PlatformID, ":")
				out.Row(strconv.FormatInt(r.Seq, 10), r.ID, r.Kind, st, cli.OrDash(to), summarize(r.Content, 60))
			}
			return out.Write(m.Out)
		},
	}
	sf.add(c)
	c.Flags().IntVar(&limit, "limit", 50, "rows per table, newest first (0 = all)")
	c.Flags().StringVar(&state, "state", "", "only rows in this state (pending, processing, scheduled, completed, failed, paused, undelivered, retrying, delivered)")
	return c
}

// statusCmd is `mailbox status`: every session under a data root.
func (m *group) statusCmd() *cobra.Command {
	var data string
	c := &cobra.Command{
		Use:   "status --data DIR",
		Short: "Summarize every session under a data root: due work, heartbeat, stuck, errors",
		Long: `status prints one line per session: inbound rows due (pending, trigger=1),
scheduled, processing and failed; outbound rows undelivered, retrying and
failed; the heartbeat's age; the stuck verdict the host would reach if the
container ran (ok, kill-ceiling, kill-claim); a hot journal; the newest
delivery error; and, while a host daemon runs on the data root, the sessions
it backed off or quarantined, with the error that made it. A session that
cannot be read shows its error instead.`,
		Example: `  sessiondb mailbox status --data /tmp/mb
  sessiondb mailbox status --data /tmp/mb --json | jq '.[] | select(.due > 0)'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if data == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "--data is required")
			}
			h, err := m.host(data)
			if err != nil {
				return err
			}
			now := m.Now()
			rep, err := hostd.Report(c.Context(), h, data, now)
			if err != nil {
				return err
			}
			all := rep.Sessions
			if m.JSON {
				return m.PrintJSON(all)
			}
			hostFound, hostLive := rep.Host != nil, rep.HostRunning
			var hs hostd.Status
			if hostFound {
				hs = *rep.Host
			}
			switch {
			case hostLive:
				fmt.Fprintf(m.Out, "host: running (pid %d, up %s)\n", hs.PID, ago(now, hs.StartedAt))
			case hostFound:
				fmt.Fprintf(m.Out, "host: not running (its status file is %s old: killed?)\n", ago(now, hs.UpdatedAt))
			default:
				fmt.Fprintln(m.Out, "host: not running")
			}
			if len(all) == 0 {
				fmt.Fprintf(m.Out, "no sessions under %s\n", cli.PrintableLine(filepath.Clean(data)))
				return nil
			}
			var tb cli.Table
			tb.Row("SESSION", "DUE", "SCHED", "PROC", "FAILED", "OUT WAIT", "OUT RETRY", "OUT FAILED", "HEARTBEAT", "STUCK", "BACKOFF", "LAST ERROR")
			for _, s := range all {
				stuck := s.Stuck
				if s.HotJournal {
					stuck += " (journal)"
				}
				backoff, lastErr := "-", s.LastError
				if s.Host != nil {
					switch {
					case s.Host.Quarantined:
						backoff = "quarantined"
					case !s.Host.BackoffUntil().IsZero():
						backoff = s.Host.BackoffUntil().Sub(now).Round(time.Second).String()
					}
					if s.Host.LastError != "" {
						lastErr = s.Host.LastError
					}
				}
				tb.Row(s.Ref.String(), strconv.Itoa(s.Due), strconv.Itoa(s.Scheduled), strconv.Itoa(s.Processing), strconv.Itoa(s.Failed),
					strconv.Itoa(s.OutUndelivered), strconv.Itoa(s.OutRetrying), strconv.Itoa(s.OutFailed), ago(now, s.Heartbeat), stuck, backoff, cli.OrDash(cli.Cut(lastErr, 60)))
			}
			return tb.Write(m.Out)
		},
	}
	c.Flags().StringVar(&data, "data", "", "data root holding <group>/<session> folders")
	return c
}

// watchCmd is `mailbox watch`: follow one session's traffic.
func (m *group) watchCmd() *cobra.Command {
	var sf sessionFlags
	var poll time.Duration
	c := &cobra.Command{
		Use:   "watch --data DIR --group G --session S",
		Short: "Follow one session's traffic live until Ctrl-C",
		Long: `watch prints every row of the session, then each new row and each change of
state (pending → processing → completed, undelivered → delivered ...) as it
happens. With --json each event is one JSON object per line.`,
		Example: `  sessiondb mailbox watch --data /tmp/mb --group demo --session s1
  sessiondb mailbox watch --dir /tmp/mb/demo/s1 --json`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if poll <= 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--poll must be positive")
			}
			h, ref, err := m.sessionHost(&sf)
			if err != nil {
				return err
			}
			dir, _ := h.Layout().SessionDir(ref)
			w, err := mailbox.NewWatcher(dir, []string{mailbox.InboundFile, mailbox.OutboundFile, mailbox.HeartbeatFile}, mailbox.WatchOptions{Interval: poll})
			if err != nil {
				return err
			}
			defer w.Close()
			seen := map[string]string{}
			enc := json.NewEncoder(m.Out)
			enc.SetEscapeHTML(false)
			for {
				ins, outs, err := h.Inspect(c.Context(), ref, 0)
				if err != nil {
					if c.Context().Err() != nil {
						return nil
					}
					// A busy or half-written file is transient: say so and
					// look again at the next change.
					fmt.Fprintf(m.Err, "watch: %s\n", cli.Printable(err.Error()))
				}
				for i := len(ins) - 1; i >= 0; i-- {
					r := ins[i]
					if seen["in:"+r.ID] == r.State {
						continue
					}
					seen["in:"+r.ID] = r.State
					if m.JSON {
						enc.Encode(map[string]any{"dir": "in", "seq": r.Seq, "id": r.ID, "kind": r.Kind, "state": r.State, "content": r.Content})
					} else {
						fmt.Fprintf(m.Out, "in   %4d %-10s %s %s: %s\n", r.Seq, cli.PrintableLine(r.State), cli.PrintableLine(r.Kind), cli.PrintableLine(r.ID), summarize(r.Content, 100))
					}
				}
				for i := len(outs) - 1; i >= 0; i-- {
					r := outs[i]
					if seen["out:"+r.ID] == r.Delivery.Status {
						continue
					}
					seen["out:"+r.ID] = r.Delivery.Status
					if m.JSON {
						enc.Encode(map[string]any{"dir": "out", "seq": r.Seq, "id": r.ID, "kind": r.Kind, "state": r.Delivery.Status, "content": r.Content})
					} else {
						fmt.Fprintf(m.Out, "out  %4d %-10s %s %s: %s\n", r.Seq, cli.PrintableLine(r.Delivery.Status), cli.PrintableLine(r.Kind), cli.PrintableLine(r.ID), summarize(r.Content, 100))
					}
				}
				if _, err := w.Wait(c.Context(), poll); err != nil {
					return nil // Ctrl-C: a normal end of watching
				}
			}
		},
	}
	sf.add(c)
	c.Flags().DurationVar(&poll, "poll", time.Second, "polling fallback when file-change notification is unavailable")
	return c
}
