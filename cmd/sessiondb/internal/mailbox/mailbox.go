// Package mailbox holds the `sessiondb mailbox` commands: enqueue, inspect
// and repair session mailboxes, and act as a session's agent from a shell.
package mailbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/mailbox"
)

// Commands returns the `mailbox` command: session mailbox inspection and
// repair, and the agent side from a shell.
func Commands(f *cli.Factory) []*cobra.Command {
	m := &group{Factory: f}
	mb := &cobra.Command{
		Use:   "mailbox",
		Short: "Session mailboxes: enqueue, inspect, repair, and act as an agent",
		Long: `A session mailbox is a folder <data>/<agent group>/<session> holding inbound.db
(the host writes, the agent reads), outbound.db (the agent writes, the host
reads) and .heartbeat, NanoClaw's contract. Name a session with
--data DIR --group G --session S, or --dir FOLDER; agent commands also read
$SESSIONDB_SESSION_DIR, which the host's waker sets for the process it starts.`,
		Example: `  sessiondb mailbox init --data /tmp/mb --group demo --session s1
  sessiondb mailbox send --data /tmp/mb --group demo --session s1 --text "hello" --channel-type cli --platform-id me
  SESSIONDB_SESSION_DIR=/tmp/mb/demo/s1 sessiondb mailbox agent poll --wait`,
	}
	mb.AddCommand(m.initCmd(), m.sendCmd(), m.projectCmd(), m.lsCmd(), m.statusCmd(), m.watchCmd(),
		m.requeueCmd(), m.recoverCmd(), m.agentCmd())
	return []*cobra.Command{mb}
}

// group is what the mailbox commands share: the factory's streams, flags
// and clock.
type group struct {
	*cli.Factory
}

// sessionFlags name one session folder.
type sessionFlags struct {
	data, group, session, dir string
}

func (f *sessionFlags) add(c *cobra.Command) { f.addTo(c.Flags()) }

func (f *sessionFlags) addTo(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&f.data, "data", "", "data root holding <group>/<session> folders")
	fs.StringVar(&f.group, "group", "", "agent group id")
	fs.StringVar(&f.session, "session", "", "session id")
	fs.StringVar(&f.dir, "dir", "", "the session folder itself (instead of --data/--group/--session)")
}

// messageFlags are the flags `send` and `agent send` share: the new
// message's id, kind, body and routing.
type messageFlags struct {
	id, kind, text, content           string
	channelType, platformID, threadID string
}

// add registers the flags, with the help of --id and --kind, which differ
// between the sides.
func (mf *messageFlags) add(c *cobra.Command, idHelp, kindHelp string) {
	f := c.Flags()
	f.StringVar(&mf.id, "id", "", idHelp)
	f.StringVar(&mf.kind, "kind", mailbox.KindChat, kindHelp)
	f.StringVar(&mf.text, "text", "", "chat text")
	f.StringVar(&mf.content, "content", "", "content as a JSON object")
	f.StringVar(&mf.channelType, "channel-type", "", "routing: channel type")
	f.StringVar(&mf.platformID, "platform-id", "", "routing: platform chat id")
	f.StringVar(&mf.threadID, "thread-id", "", "routing: thread id")
}

func (mf *messageFlags) routing() mailbox.Routing {
	return mailbox.Routing{ChannelType: mf.channelType, PlatformID: mf.platformID, ThreadID: mf.threadID}
}

// body is the message's content: textContent (built around --text) when
// --text is given, --content as it is, else an error that says to give
// what is missing.
func (mf *messageFlags) body(textContent any, missing string) (json.RawMessage, error) {
	switch {
	case mf.text != "" && mf.content != "":
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "give --text or --content, not both")
	case mf.text != "":
		return mailbox.MarshalContent(textContent)
	case mf.content != "":
		return json.RawMessage(mf.content), nil
	}
	return nil, sessiondb.Errorf(sessiondb.EINVALID, "nothing to send: give %s", missing)
}

// newID is --id, or a generated message id when it is empty.
func (mf *messageFlags) newID(now time.Time) string {
	if mf.id == "" {
		return mailbox.NewID("msg", now)
	}
	return mf.id
}

// resolve returns the data root and session ref named by the flags, else
// by $SESSIONDB_SESSION_DIR when envOK.
func (f *sessionFlags) resolve(envOK bool) (string, mailbox.SessionRef, error) {
	dir := f.dir
	if dir == "" && f.data == "" && f.group == "" && f.session == "" && envOK {
		dir = os.Getenv("SESSIONDB_SESSION_DIR")
	}
	if dir != "" {
		if f.data != "" || f.group != "" || f.session != "" {
			return "", mailbox.SessionRef{}, sessiondb.Errorf(sessiondb.EINVALID, "give either --dir or --data/--group/--session, not both")
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", mailbox.SessionRef{}, sessiondb.Errorf(sessiondb.EINVALID, "--dir %q: %v", dir, err)
		}
		ref := mailbox.SessionRef{AgentGroupID: filepath.Base(filepath.Dir(abs)), SessionID: filepath.Base(abs)}
		if err := ref.Validate(); err != nil {
			return "", ref, sessiondb.Wrap(sessiondb.EINVALID, err, "--dir %q", dir)
		}
		return filepath.Dir(filepath.Dir(abs)), ref, nil
	}
	switch {
	case f.data == "":
		return "", mailbox.SessionRef{}, sessiondb.Errorf(sessiondb.EINVALID, "name the session: --data DIR --group G --session S, or --dir FOLDER")
	case f.group == "":
		return "", mailbox.SessionRef{}, sessiondb.Errorf(sessiondb.EINVALID, "--group is required with --data")
	case f.session == "":
		return "", mailbox.SessionRef{}, sessiondb.Errorf(sessiondb.EINVALID, "--session is required with --data")
	}
	ref := mailbox.SessionRef{AgentGroupID: f.group, SessionID: f.session}
	if err := ref.Validate(); err != nil {
		return "", ref, err
	}
	return f.data, ref, nil
}

// host opens a Host over root (nothing is opened until used).
func (m *group) host(root string) (*mailbox.Host, error) {
	return mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}, Now: m.Now})
}

// sessionHost resolves the session flags to a host and a ref whose
// inbound.db exists.
func (m *group) sessionHost(f *sessionFlags) (*mailbox.Host, mailbox.SessionRef, error) {
	root, ref, err := f.resolve(false)
	if err != nil {
		return nil, ref, err
	}
	h, err := m.host(root)
	if err != nil {
		return nil, ref, err
	}
	p, _ := h.Layout().InboundPath(ref)
	if _, err := os.Stat(p); err != nil {
		return nil, ref, sessiondb.Errorf(sessiondb.ENOTFOUND, "session %s: no %s (run `sessiondb mailbox init` first)", ref, p)
	}
	return h, ref, nil
}

// parseWhen reads a time flag: RFC 3339 / ISO-8601 (mailbox forms) or a
// duration from now ("+90s", "5m").
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "+")); err == nil {
		if d < 0 {
			return time.Time{}, sessiondb.Errorf(sessiondb.EINVALID, "--%s %q: a negative duration", flag, s)
		}
		return now.Add(d), nil
	}
	t, err := mailbox.ParseTime(s)
	if err != nil {
		return time.Time{}, sessiondb.Errorf(sessiondb.EINVALID, "--%s %q: want a time like 2026-03-01T09:00:00Z or a duration like +10m", flag, s)
	}
	return t, nil
}

// summarize is a one-line view of a content object for human output,
// escaped for the terminal (cli.PrintableLine).
func summarize(raw json.RawMessage, max int) string {
	c, err := mailbox.DecodeContent(raw)
	s := ""
	switch {
	case err != nil:
		s = string(raw)
	case c.Text != "":
		s = c.Text
	case c.Markdown != "":
		s = c.Markdown
	case c.Operation != "":
		s = c.Operation + " " + c.MessageID
	case c.Action != "":
		s = "action " + c.Action
	case c.Type == "ask_question":
		var q struct{ Question string }
		_ = json.Unmarshal(raw, &q)
		s = "question: " + q.Question
	case c.Type == "card":
		var k struct{ Card struct{ Title string } }
		_ = json.Unmarshal(raw, &k)
		s = "card: " + k.Card.Title
	default:
		var task struct {
			Prompt string `json:"prompt"`
		}
		if json.Unmarshal(raw, &task) == nil && task.Prompt != "" {
			s = task.Prompt
		} else {
			s = string(raw)
		}
	}
	if max <= 0 {
		return cli.PrintableLine(strings.Join(strings.Fields(s), " "))
	}
	return cli.PrintableLine(cli.Cut(s, max))
}

// ago renders how long ago t was ("-" for zero).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String()
}
