package mailbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/mailbox"
)

// sendFlags are `agent send`'s flags beyond the shared messageFlags.
type sendFlags struct {
	mf                          messageFlags
	to, replyTo, after          string
	files, complete             []string
	markdown, card              string
	edit, react                 int64
	emoji                       string
	question, title             string
	options                     []string
	wait                        bool
	timeout                     time.Duration
	action, args                string
	taskID, prompt, script, at  string
	every                       string
	noEvery, noScript           bool
	changedScript, changedEvery bool
}

func (m *group) agentSendCmd(open openAgentFunc) *cobra.Command {
	var sf sendFlags
	c := &cobra.Command{
		Use:   "send (--text T | --markdown M | --content JSON | --card JSON | --edit SEQ | --react SEQ | --question Q | --action A) [flags]",
		Short: "Write an outbound message for the host to deliver: any shape NanoClaw's agent sends",
		Long: `send writes one outbound row, in the shapes NanoClaw's agent tools write:

  --text T                     a chat message {"text"} (--file adds "files")
  --markdown M                 {"markdown"}
  --content JSON [--kind K]    any content object as it is
  --card JSON [--text FALLBACK]  a card (kind chat-sdk): {title, description?,
                               children?, actions?}
  --edit SEQ --text T          edit the message numbered SEQ (its platform id
                               once delivered), on that message's chat
  --react SEQ --emoji E        react to message SEQ (shortcode: thumbs_up)
  --question Q --option A --option B=b [--title T] [--wait]
                               a multiple-choice card (kind chat-sdk); an
                               option is LABEL or LABEL=VALUE; --wait blocks
                               until the answer and prints the chosen value
  --action A                   a request to the host (kind system):
    schedule_task --prompt P [--at WHEN] [--every CRON] [--script S] [--task-id ID]
    cancel_task|pause_task|resume_task --task-id ID
    update_task --task-id ID [--prompt P] [--at WHEN] [--every CRON | --no-every]
                [--script S | --no-script]
    create_agent|install_packages|add_mcp_server|cli_request --args JSON
                               (the action's fields, e.g. {"name":"helper"})

Where a message goes: --channel-type/--platform-id when given; else --to NAME
(a destination: a chat, or another agent group for agent-to-agent; the
session's thread is kept when NAME is the session's own chat); else the chat
of the inbound message --reply-to names; else the session's default (its own
chat and thread, or its only destination). --reply-to also sets in_reply_to.
Edits and reactions go where their target is. --after delays delivery (a time
or +duration). --complete ID acks inbound messages completed in the same
commit as the row: the reply that ends a batch and the batch's completion in
one write instead of a send and an ack (an unknown ID is refused, and nothing
is written). Prints "sent ID as seq N" (--json: {"id","seq"}, and
"completed" with --complete).`,
		Example: `  sessiondb mailbox agent send --reply-to ID --text "on it"
  sessiondb mailbox agent send --reply-to ID --text "done" --complete ID
  sessiondb mailbox agent send --text "chart attached" --file chart.png
  sessiondb mailbox agent send --edit 3 --text "fixed typo"
  sessiondb mailbox agent send --react 2 --emoji thumbs_up
  sessiondb mailbox agent send --question "Deploy now?" --option Yes --option "Not yet=no" --wait
  sessiondb mailbox agent send --to research --text "summarize the thread"
  sessiondb mailbox agent send --text "stand-up in 5" --after +25m
  sessiondb mailbox agent send --action schedule_task --prompt "weekly report" --at +1h --every "0 9 * * 1"
  sessiondb mailbox agent send --action install_packages --args '{"apt":["jq"],"reason":"parse JSON"}'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			sf.changedScript, sf.changedEvery = c.Flags().Changed("script"), c.Flags().Changed("every")
			ctx := c.Context()
			return withAgent(ctx, open, func(a *mailbox.Agent) error {
				msg, err := sf.message(ctx, a, m.Now())
				if err != nil {
					return err
				}
				seq, err := a.Send(ctx, msg)
				if err != nil {
					return err
				}
				if err := a.TouchHeartbeat(); err != nil {
					return err
				}
				if sf.wait {
					return m.awaitAnswer(ctx, a, msg.ID, seq, sf.timeout)
				}
				if m.JSON {
					out := map[string]any{"id": msg.ID, "seq": seq}
					if len(msg.Complete) > 0 {
						out["completed"] = msg.Complete
					}
					return m.PrintJSON(out)
				}
				fmt.Fprintf(m.Out, "sent %s as seq %d\n", cli.PrintableLine(msg.ID), seq)
				return nil
			})
		},
	}
	sf.mf.add(c, "message id (default msg-<ms>-<random>)", "message kind for --content: chat, chat-sdk, system")
	f := c.Flags()
	f.StringVar(&sf.markdown, "markdown", "", "a markdown message")
	f.StringVar(&sf.card, "card", "", "a card, as a JSON object {title, description?, children?, actions?}")
	f.Int64Var(&sf.edit, "edit", 0, "edit the message numbered SEQ (with --text)")
	f.Int64Var(&sf.react, "react", 0, "react to the message numbered SEQ (with --emoji)")
	f.StringVar(&sf.emoji, "emoji", "", "the reaction's emoji shortcode, e.g. thumbs_up")
	f.StringVar(&sf.question, "question", "", "ask a multiple-choice question")
	f.StringVar(&sf.title, "title", "", "the question card's title (default: the question)")
	f.StringArrayVar(&sf.options, "option", nil, "a question's answer: LABEL or LABEL=VALUE (repeatable)")
	f.BoolVar(&sf.wait, "wait", false, "with --question, wait for the answer and print the chosen value")
	f.DurationVar(&sf.timeout, "timeout", mailbox.DefaultQuestionTimeout, "with --wait, how long to wait for the answer (then exit 3)")
	f.StringVar(&sf.action, "action", "", "a host action: schedule_task, cancel_task, pause_task, resume_task, update_task, create_agent, install_packages, add_mcp_server, cli_request")
	f.StringVar(&sf.args, "args", "", "the fields of create_agent, install_packages, add_mcp_server or cli_request, as a JSON object")
	f.StringVar(&sf.taskID, "task-id", "", "the task a task action is about (schedule_task: its id)")
	f.StringVar(&sf.prompt, "prompt", "", "the task's prompt (schedule_task, update_task)")
	f.StringVar(&sf.at, "at", "", "when the task runs: a time or +duration (schedule_task, update_task)")
	f.StringVar(&sf.every, "every", "", "cron expression repeating the task (schedule_task, update_task)")
	f.BoolVar(&sf.noEvery, "no-every", false, "update_task: stop repeating")
	f.StringVar(&sf.script, "script", "", "the task's pre-script (bash)")
	f.BoolVar(&sf.noScript, "no-script", false, "update_task: drop the pre-script")
	f.StringVar(&sf.to, "to", "", "destination name (sessiondb mailbox agent destinations)")
	f.StringVar(&sf.replyTo, "reply-to", "", "inbound message id this answers (in_reply_to; its chat is the default target)")
	f.StringVar(&sf.after, "after", "", "deliver after this time (RFC 3339) or duration from now (+10m)")
	f.StringArrayVar(&sf.files, "file", nil, "attach a file (repeatable)")
	f.StringArrayVar(&sf.complete, "complete", nil, "ack this inbound message completed in the same commit (repeatable)")
	return c
}

// shape names the one content flag given; more than one, or none, is an
// error naming them.
func (sf *sendFlags) shape() (string, error) {
	var given []string
	for _, s := range []struct {
		flag string
		set  bool
	}{
		{"--edit", sf.edit != 0}, {"--react", sf.react != 0}, {"--question", sf.question != ""},
		{"--action", sf.action != ""}, {"--card", sf.card != ""}, {"--markdown", sf.markdown != ""},
		{"--content", sf.mf.content != ""},
	} {
		if s.set {
			given = append(given, s.flag)
		}
	}
	switch {
	case len(given) > 1:
		return "", sessiondb.Errorf(sessiondb.EINVALID, "give one of %s, not several", strings.Join(given, ", "))
	case len(given) == 1:
		return given[0], nil
	case sf.mf.text != "":
		return "--text", nil
	}
	return "", sessiondb.Errorf(sessiondb.EINVALID, "nothing to send: give --text, --markdown, --content, --card, --edit, --react, --question or --action")
}

// message builds the outbound row the flags describe.
func (sf *sendFlags) message(ctx context.Context, a *mailbox.Agent, now time.Time) (mailbox.OutboundMessage, error) {
	shape, err := sf.shape()
	if err != nil {
		return mailbox.OutboundMessage{}, err
	}
	bad := func(format string, args ...any) (mailbox.OutboundMessage, error) {
		return mailbox.OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, format, args...)
	}
	if sf.wait && shape != "--question" {
		return bad("--wait goes with --question")
	}
	if sf.mf.text != "" && shape != "--text" && shape != "--edit" && shape != "--card" {
		return bad("--text does not go with %s", shape)
	}
	if sf.emoji != "" && shape != "--react" {
		return bad("--emoji goes with --react")
	}
	if len(sf.options) > 0 && shape != "--question" {
		return bad("--option goes with --question")
	}
	if len(sf.options) == 0 && shape == "--question" {
		return bad("--question needs at least one --option")
	}
	if sf.mf.kind != mailbox.KindChat && shape != "--content" {
		return bad("--kind goes with --content (%s sets its own kind)", shape)
	}
	if shape != "--action" {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--args", sf.args != ""}, {"--task-id", sf.taskID != ""}, {"--prompt", sf.prompt != ""}, {"--at", sf.at != ""},
			{"--every", sf.changedEvery}, {"--script", sf.changedScript}, {"--no-every", sf.noEvery}, {"--no-script", sf.noScript}} {
			if f.set {
				return bad("%s goes with --action", f.name)
			}
		}
	}
	var msg mailbox.OutboundMessage
	switch shape {
	case "--edit":
		msg, err = a.Edit(ctx, sf.edit, sf.mf.text)
	case "--react":
		msg, err = a.React(ctx, sf.react, sf.emoji)
	case "--action":
		msg, err = sf.actionMessage(ctx, a, now)
	default:
		var routing mailbox.Routing
		if routing, err = sf.routing(ctx, a); err != nil {
			return msg, err
		}
		switch shape {
		case "--question":
			msg, err = sf.questionMessage(routing, now)
		case "--card":
			msg, err = mailbox.Card(json.RawMessage(sf.card), sf.mf.text, routing)
		case "--markdown":
			msg.Content, err = mailbox.MarshalContent(map[string]string{"markdown": sf.markdown})
		case "--content":
			msg.Kind, msg.Content = sf.mf.kind, json.RawMessage(sf.mf.content)
		case "--text":
			// Agent.Send lists the --file names in the content itself.
			msg.Content, err = mailbox.MarshalContent(map[string]string{"text": sf.mf.text})
		}
		msg.Routing = routing
	}
	if err != nil {
		return msg, err
	}
	if sf.mf.id != "" {
		if msg.ID != "" && msg.ID != sf.mf.id && (shape == "--question" || shape == "--action") {
			return bad("--id: %s names its row itself (%s)", shape, msg.ID)
		}
		msg.ID = sf.mf.id
	}
	if msg.ID == "" {
		msg.ID = mailbox.NewID("msg", now)
	}
	msg.InReplyTo, msg.Files = sf.replyTo, sf.files
	if len(sf.complete) > 0 {
		if err := a.RequireInbound(ctx, sf.complete...); err != nil {
			return msg, err
		}
		msg.Complete = sf.complete
	}
	if sf.after != "" {
		if msg.DeliverAfter, err = parseWhen("after", sf.after, now); err != nil {
			return msg, err
		}
	}
	return msg, nil
}

// routing is where a message goes (see the command's help).
func (sf *sendFlags) routing(ctx context.Context, a *mailbox.Agent) (mailbox.Routing, error) {
	if r := sf.mf.routing(); !r.IsZero() {
		if sf.to != "" {
			return r, sessiondb.Errorf(sessiondb.EINVALID, "give --to or --channel-type/--platform-id, not both")
		}
		return r, nil
	}
	if sf.to != "" {
		return a.RouteTo(ctx, sf.to)
	}
	if sf.replyTo != "" {
		in, err := a.InboundByID(ctx, sf.replyTo)
		if err != nil {
			return mailbox.Routing{}, err
		}
		if !in.Routing.IsZero() {
			return in.Routing, nil
		}
	}
	return a.RouteTo(ctx, "")
}

// questionMessage builds the --question card.
func (sf *sendFlags) questionMessage(routing mailbox.Routing, now time.Time) (mailbox.OutboundMessage, error) {
	opts := make([]mailbox.QuestionOption, len(sf.options))
	for i, o := range sf.options {
		label, value, _ := strings.Cut(o, "=")
		opts[i] = mailbox.QuestionOption{Label: label, Value: value}
	}
	title := sf.title
	if title == "" {
		title = sf.question
	}
	return mailbox.Question(sf.mf.id, title, sf.question, opts, routing, now)
}

// actionMessage builds the --action request.
func (sf *sendFlags) actionMessage(ctx context.Context, a *mailbox.Agent, now time.Time) (mailbox.OutboundMessage, error) {
	bad := func(format string, args ...any) (mailbox.OutboundMessage, error) {
		return mailbox.OutboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "--action %s: "+format, append([]any{sf.action}, args...)...)
	}
	taskFlags := sf.prompt != "" || sf.at != "" || sf.changedEvery || sf.changedScript || sf.noEvery || sf.noScript
	switch sf.action {
	case mailbox.ActionScheduleTask:
		if sf.args != "" || sf.noEvery || sf.noScript {
			return bad("takes --prompt, --at, --every, --script and --task-id")
		}
		t := mailbox.Task{ID: sf.taskID, Prompt: sf.prompt, Recurrence: sf.every}
		if sf.changedScript {
			t.Script = &sf.script
		}
		if sf.at != "" {
			when, err := parseWhen("at", sf.at, now)
			if err != nil {
				return mailbox.OutboundMessage{}, err
			}
			t.ProcessAfter = when
		}
		// A task answers in the session's own chat, as NanoClaw's
		// schedule_task does; a session without one schedules it anyway.
		if r, err := sf.routing(ctx, a); err == nil {
			t.Routing = r
		} else if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND || sf.to != "" {
			return mailbox.OutboundMessage{}, err
		}
		return mailbox.ScheduleTaskAction(t, now)
	case mailbox.ActionCancelTask, mailbox.ActionPauseTask, mailbox.ActionResumeTask:
		if sf.args != "" || taskFlags {
			return bad("takes --task-id only")
		}
		return mailbox.TaskAction(sf.action, sf.taskID, now)
	case mailbox.ActionUpdateTask:
		if sf.args != "" {
			return bad("takes --task-id, --prompt, --at, --every/--no-every, --script/--no-script")
		}
		if (sf.changedEvery && sf.noEvery) || (sf.changedScript && sf.noScript) {
			return bad("give a new value or its --no- flag, not both")
		}
		var u mailbox.TaskUpdate
		if sf.prompt != "" {
			u.Prompt = &sf.prompt
		}
		if sf.at != "" {
			when, err := parseWhen("at", sf.at, now)
			if err != nil {
				return mailbox.OutboundMessage{}, err
			}
			u.ProcessAfter = &when
		}
		if sf.changedEvery {
			u.Recurrence = &sf.every
		}
		if sf.changedScript {
			u.Script = &sf.script
		}
		u.ClearRecurrence, u.ClearScript = sf.noEvery, sf.noScript
		return mailbox.UpdateTaskAction(sf.taskID, u, now)
	}
	if taskFlags || sf.taskID != "" {
		return bad("takes --args JSON (the task flags are for the task actions)")
	}
	return mailbox.Action(sf.action, json.RawMessage(sf.args), now)
}

// awaitAnswer waits for the answer to the question just sent as id, acks
// it, and prints the chosen value (--json: the question's id and seq and
// the answer's content).
func (m *group) awaitAnswer(ctx context.Context, a *mailbox.Agent, id string, seq int64, timeout time.Duration) error {
	row, err := a.AwaitQuestionResponse(ctx, id, timeout)
	if err != nil {
		return err
	}
	var ans struct {
		SelectedOption string `json:"selectedOption"`
	}
	_ = json.Unmarshal(row.Content, &ans)
	if m.JSON {
		return m.PrintJSON(map[string]any{"id": id, "seq": seq, "answer": row.Content})
	}
	fmt.Fprintln(m.Out, cli.PrintableLine(ans.SelectedOption))
	return nil
}
