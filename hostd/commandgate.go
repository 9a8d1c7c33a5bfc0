package hostd

import (
	"context"
	"strings"
	"unicode"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// The command gate is NanoClaw's (src/command-gate.ts, called from
// deliverToAgent in src/router.ts): a message whose first word is one of
// the agent runtime's own slash commands never reaches the agent unless it
// is one anybody may send. The lists are NanoClaw's, word for word.
var (
	// filteredCommands are dropped for everyone, admins included: they
	// drive the agent runtime's login, configuration and remote control,
	// which no chat should reach.
	filteredCommands = map[string]bool{"/help": true, "/login": true, "/logout": true, "/doctor": true,
		"/config": true, "/remote-control": true}
	// adminCommands reach the agent only from a sender with admin
	// privilege over its agent group; anyone else is told no.
	adminCommands = map[string]bool{"/clear": true, "/compact": true, "/context": true, "/cost": true, "/files": true}
)

// The gate's verdicts on a message a wiring engaged on or keeps as context
// (Delivery.CommandGate).
const (
	CommandFiltered = "filtered" // a filtered command: nothing written, nobody told
	CommandDenied   = "denied"   // an admin command from a sender without admin privilege: nothing written, the chat told
)

// gateCommand decides what the gate does with text sent to agentGroupID by
// a user with access u: "" lets it through (not a command, a command the
// gate does not know, or an admin command from an admin), else
// CommandFiltered or CommandDenied with the command. The command is the
// first word, lower-cased, of the text trimmed as JavaScript's trim does
// (a word that starts with /clear is /clear); "admin" is NanoClaw's (owner, global admin or admin of the group:
// HasAdminPrivilege), and an unidentified sender has none.
func gateCommand(text string, u sessiondb.UserAccess, agentGroupID string) (verdict, command string) {
	command = slashCommand(text)
	if strings.HasPrefix(command, "/clear") {
		// NanoClaw's agent runner clears its session on any text that
		// starts with /clear (isClearCommand in container/agent-runner/
		// src/formatter.ts), where NanoClaw's gate knows /clear alone and
		// lets "/clearly" through: the gate here takes them all for /clear.
		command = "/clear"
	}
	switch {
	case filteredCommands[command]:
		return CommandFiltered, command
	case adminCommands[command] && !sessiondb.HasAdminPrivilege(u, agentGroupID):
		return CommandDenied, command
	}
	return "", ""
}

// slashCommand is the command text starts with, lower-cased ("" when the
// trimmed text does not start with '/'), read as NanoClaw reads it:
// text.trim(), then text.split(/\s/)[0].toLowerCase(). JavaScript's white
// space is not Go's (it has U+FEFF, not U+0085), so "\uFEFF/clear" is
// /clear and "\u0085/clear" is not a command, there as here. Only ASCII is
// lower-cased: JavaScript's toLowerCase maps no other character onto the
// ASCII letters of the commands (U+0130 becomes two characters, the Kelvin
// sign a k), where Go's would make "/fİles" /files.
func slashCommand(text string) string {
	t := strings.TrimFunc(text, jsSpace)
	if !strings.HasPrefix(t, "/") {
		return ""
	}
	if i := strings.IndexFunc(t, jsSpace); i >= 0 {
		t = t[:i]
	}
	b := []byte(t)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// jsSpace reports JavaScript's white space and line terminators (what
// trim removes and \s matches): TAB, LF, VT, FF, CR, U+FEFF, U+2028,
// U+2029 and the space separators (Zs).
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', '\ufeff', '\u2028', '\u2029':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// denial is the answer to a denied admin command: NanoClaw's words.
func denial(command string) string {
	return "Permission denied: " + command + " requires admin access."
}

// deny answers a denied admin command in the chat (and thread) the message
// came from, or where a replayed NanoClaw event said its answers go,
// straight through the channel deliverer, as the host's cards go: the
// agent never sees the command or the answer. NanoClaw means to write the
// same message as a row into the session's outbound.db (its delivery loop
// would send it); see docs/control-plane.md, where we differ.
func (r *Router) deny(ctx context.Context, ref mailbox.SessionRef, ev Event, command string) error {
	content, err := mailbox.MarshalContent(struct {
		Text string `json:"text"`
	}{denial(command)})
	if err != nil {
		return err
	}
	_, err = r.send(ctx, ref, mailbox.OutboundRow{ID: mailbox.NewID("deny", r.h.Now()), Kind: mailbox.KindChat, Routing: ev.routing(), Content: content})
	return err
}
