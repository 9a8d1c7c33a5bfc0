package hostd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/mailbox"
)

// DefaultExecTimeout bounds one run of an exec deliverer's command.
const DefaultExecTimeout = 30 * time.Second

// ExecDeliverer delivers each outbound row by running Command once, with
// the row's DeliveryEnvelope as ONE JSON line on its standard input (then
// end of input). One process per message keeps the protocol free of
// framing: a command that reads to end of input (`cat >> file`) works, and
// a crashed command costs one attempt, never a stream of them.
//
// The command runs under /bin/sh -c, in its own process group, with
// SESSIONDB_AGENT_GROUP, SESSIONDB_SESSION, SESSIONDB_MESSAGE_ID and
// SESSIONDB_SESSION_DIR set. Its reply is the last line of standard output
// that is a JSON object:
//
//	{"ok":true,"platform_message_id":"..."}  delivered (the id is recorded)
//	{"ok":false,"error":"...","permanent":true}  failed; permanent fails the row at once
//
// A non-zero exit status is a failure (retried with back-off) whatever was
// printed, unless the reply said permanent. Exit 0 without a readable reply
// line counts as delivered without a platform id. A run longer than Timeout (or
// the caller's deadline) is killed and counts as a failure.
type ExecDeliverer struct {
	// Command is a shell command line.
	Command string
	// Layout, when set, fills SESSIONDB_SESSION_DIR.
	Layout mailbox.Layout
	// Timeout bounds one run; default DefaultExecTimeout.
	Timeout time.Duration
	// Env is added to the inherited environment.
	Env []string
}

// NewExecDeliverer returns an ExecDeliverer for command (not empty).
func NewExecDeliverer(command string, layout mailbox.Layout) (*ExecDeliverer, error) {
	if strings.TrimSpace(command) == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "exec deliverer: the command is empty")
	}
	return &ExecDeliverer{Command: command, Layout: layout}, nil
}

// Deliver runs the command for row; see ExecDeliverer.
func (d *ExecDeliverer) Deliver(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
	line, err := encodeEnvelope(ref, row)
	if err != nil {
		return "", err
	}
	dir := ""
	if d.Layout.Root != "" {
		dir, _ = d.Layout.SessionDir(ref)
	}
	env := append(append([]string(nil), d.Env...), "SESSIONDB_AGENT_GROUP="+ref.AgentGroupID, "SESSIONDB_SESSION="+ref.SessionID,
		"SESSIONDB_MESSAGE_ID="+row.ID, "SESSIONDB_SESSION_DIR="+dir)
	stdout, runErr := runHook(ctx, d.Command, append(line, '\n'), env, positiveOr(d.Timeout, DefaultExecTimeout), "exec deliverer")

	reply, found, perr := lastReply(stdout)
	if found && perr == nil && reply.OK != nil && !*reply.OK {
		return "", replyError(reply, "exec deliverer")
	}
	if runErr != nil {
		return "", runErr
	}
	// Exit 0 is the command's word that it delivered: a reply line we
	// cannot read (a shell that ate the quotes of echo {"ok":true}) must
	// not make us send the message twice.
	if perr != nil {
		return "", nil
	}
	return reply.PlatformMessageID, nil
}

// runHook runs command under /bin/sh -c, in its own process group, with
// stdin as its input and env added to the inherited environment, for at
// most timeout (or the caller's deadline): a run past it is killed with
// everything it started. It returns the first 64 KiB of standard output;
// the error (a non-zero exit, with the first line of standard error, a
// timeout, a command that did not start) names the hook as who.
func runHook(ctx context.Context, command string, stdin []byte, env []string, timeout time.Duration, who string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	ownProcessGroup(cmd)
	cmd.Cancel = func() error { return kill(cmd) }
	// Children that keep the pipes open must not hold Wait forever.
	cmd.WaitDelay = time.Second
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = 64<<10, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), env...)
	runErr := cmd.Run()
	if runErr == nil {
		return stdout.Bytes(), nil
	}
	why := strings.TrimSpace(stderr.String())
	if ctx.Err() != nil {
		return stdout.Bytes(), sessiondb.Errorf(sessiondb.EINTERNAL, "%s: %s: %v", who, ctx.Err(), runErr)
	}
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		if why != "" {
			return stdout.Bytes(), sessiondb.Errorf(sessiondb.EINTERNAL, "%s exited with status %d: %s", who, ee.ExitCode(), errtext.Clip(why, 300))
		}
		return stdout.Bytes(), sessiondb.Errorf(sessiondb.EINTERNAL, "%s exited with status %d", who, ee.ExitCode())
	}
	return stdout.Bytes(), sessiondb.Wrap(sessiondb.EINTERNAL, runErr, "%s", who)
}

// lastReply finds the last stdout line that is a JSON object.
func lastReply(out []byte) (deliveryReply, bool, error) {
	lines := strings.Split(strings.TrimRight(string(out), "\r\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "{") {
			return parseReply([]byte(lines[i]))
		}
	}
	return deliveryReply{}, false, nil
}

// limitedBuffer keeps the first max bytes written and drops the rest, so a
// chatty command cannot grow the host's memory.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
