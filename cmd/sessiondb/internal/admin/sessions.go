package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/mailbox"
)

func (a *group) sessionsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "sessions",
		Short: "The session registry: list, show, close",
		Long: `Sessions are the conversations of agent groups: the router makes one per chat
(or thread) as the wiring's session mode says, with its mailbox folder under
--data. Core never closes a session; an admin can, and the router then opens a
new one for the next message.`,
	}, a.sessionsListCmd(), a.sessionsShowCmd(), a.sessionsCloseCmd())
}

func (a *group) sessionsListCmd() *cobra.Command {
	var f sessiondb.AgentSessionFilter
	c := &cobra.Command{
		Use:   "list [--group ID] [--chat ID] [--status active|closed] [--container running|idle|stopped] [--limit N] [--cursor C]",
		Short: "List sessions, newest first",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := f.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.ReadStore, func(ctx context.Context, reg sessiondb.Registry) error {
				p, err := reg.ListAgentSessions(ctx, f)
				if err != nil {
					return err
				}
				p.Sessions = sessiondb.NonNil(p.Sessions)
				return cli.PrintPage(a.Factory, p, p.Sessions, p.NextCursor, sessionColumns)
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.AgentGroupID, "group", "", "only this agent group's sessions")
	fl.StringVar(&f.MessagingGroupID, "chat", "", "only this chat's sessions")
	fl.StringVar((*string)(&f.Status), "status", "", "only sessions with this status: active|closed")
	fl.StringVar((*string)(&f.ContainerStatus), "container", "", "only sessions whose container is: running|idle|stopped")
	fl.IntVar(&f.Limit, "limit", 100, "sessions per page")
	fl.StringVar(&f.Cursor, "cursor", "", "continue after the previous page (its last line on stderr names it)")
	return c
}

var sessionColumns = cli.Columns[sessiondb.AgentSession]{
	Header: []string{"ID", "AGENT GROUP", "CHAT", "THREAD", "STATUS", "CONTAINER", "LAST ACTIVE", "CREATED"},
	Cells: func(s sessiondb.AgentSession) []string {
		return []string{s.ID, s.AgentGroupID, cli.OrDash(s.MessagingGroupID), cli.OrDash(s.ThreadID), string(s.Status), string(s.ContainerStatus), when(s.LastActive), when(s.CreatedAt)}
	},
}

func (a *group) sessionsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a session, its mailbox folder and its pending questions",
		Args:  cli.ExactArgs(1, "one session id"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.ReadStore, func(ctx context.Context, reg sessiondb.Registry) error {
				s, err := reg.GetAgentSession(ctx, args[0])
				if err != nil {
					return err
				}
				qs, err := reg.ListQuestions(ctx, s.ID)
				if err != nil {
					return err
				}
				folder := ""
				var st *mailbox.SessionStatus
				if root, err := cli.DataPath(a.data); err == nil {
					l := mailbox.Layout{Root: root}
					if p, err := l.InboundPath(s.Ref()); err == nil {
						if _, err := os.Stat(p); err == nil {
							folder, _ = l.SessionDir(s.Ref())
							h, err := mailbox.NewHost(mailbox.HostOptions{Layout: l, Now: a.Now})
							if err == nil {
								if ss, err := h.Status(ctx, s.Ref()); err == nil {
									st = &ss
								}
							}
						} else if !errors.Is(err, fs.ErrNotExist) {
							return err
						}
					}
				}
				if a.JSON {
					return a.PrintJSON(map[string]any{"session": s, "folder": folder, "mailbox": st, "questions": sessiondb.NonNil(qs)})
				}
				_ = cli.WriteFields(a.Out, [][2]string{{"id", s.ID}, {"agent group", s.AgentGroupID}, {"chat", s.MessagingGroupID}, {"thread", s.ThreadID},
					{"status", string(s.Status)}, {"container", string(s.ContainerStatus)}, {"last active", whenSet(s.LastActive)},
					{"created", when(s.CreatedAt)}, {"folder", folder}})
				if st != nil {
					fmt.Fprintf(a.Out, "\nmailbox: %d pending (%d due), %d completed, %d failed inbound; %d outbound undelivered\n", st.Pending, st.Due, st.Completed, st.Failed, st.OutUndelivered)
				}
				if len(qs) > 0 {
					fmt.Fprintf(a.Out, "\npending questions (%d):\n", len(qs))
					_ = questionColumns.Write(a.Out, qs)
				}
				return nil
			})
		},
	}
}

func (a *group) sessionsCloseCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "close ID [--yes]",
		Short: "Close a session: the router opens a new one for the chat's next message",
		Long: `close marks a session closed. Its folder and messages stay; the router never
routes to a closed session again, so the chat's next message starts a new one.
Asks first on a terminal.`,
		Args: cli.ExactArgs(1, "one session id"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				s, err := reg.GetAgentSession(ctx, args[0])
				if err != nil {
					return err
				}
				show := func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "session %s of agent group %s (chat %s), last active %s\n", s.ID, s.AgentGroupID, cli.OrDash(s.MessagingGroupID), when(s.LastActive))
					return err
				}
				if err := a.Confirm(yes, show, fmt.Sprintf("Close session %s?", s.ID)); err != nil {
					return err
				}
				if err := reg.CloseSession(ctx, s.ID); err != nil {
					return err
				}
				return a.done(map[string]any{"closed": s.ID}, "closed session %s", s.ID)
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

func (a *group) approvalsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "approvals",
		Short: "Pending approvals: list, expire",
		Long: `Three kinds of approval wait for an admin's click: an agent's action
(install_packages, add_mcp_server, ...), an unknown sender in a chat that asks
about them, and an unknown chat that mentioned the bot. A click arrives through
` + "`sessiondb route`" + ` like any event.`,
	}, a.approvalsListCmd(), a.approvalsExpireCmd())
}

func (a *group) approvalsListCmd() *cobra.Command {
	var st sessiondb.ApprovalStatus
	c := &cobra.Command{
		Use:   "list [--status pending|approved|rejected|expired]",
		Short: "List pending approvals of every kind, oldest first",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkWord("status", st.Validate()); err != nil {
				return err
			}
			return a.with(c, cli.ReadStore, func(ctx context.Context, reg sessiondb.Registry) error {
				actions, err := reg.ListApprovals(ctx, sessiondb.ApprovalFilter{Status: st, Limit: 1000})
				if err != nil {
					return err
				}
				senders, err := reg.ListSenderApprovals(ctx, "")
				if err != nil {
					return err
				}
				chats, err := reg.ListChannelApprovals(ctx)
				if err != nil {
					return err
				}
				if a.JSON {
					return a.PrintJSON(map[string]any{"actions": sessiondb.NonNil(actions), "senders": sessiondb.NonNil(senders), "chats": sessiondb.NonNil(chats)})
				}
				if len(actions) == 0 && (st != sessiondb.ApprovalPending || len(senders)+len(chats) == 0) {
					fmt.Fprintln(a.Err, cli.NothingToList)
					return nil
				}
				t := &cli.Table{}
				t.Row("KIND", "ID", "AGENT GROUP", "WHAT", "ASKED", "STATUS", "CREATED")
				for _, p := range actions {
					t.Row("action", p.ApprovalID, cli.OrDash(p.AgentGroupID), p.Action+" (session "+cli.OrDash(p.SessionID)+")", cli.OrDash(p.PlatformID), string(p.Status), when(p.CreatedAt))
				}
				if st == sessiondb.ApprovalPending {
					for _, p := range senders {
						t.Row("sender", p.ID, p.AgentGroupID, p.SenderIdentity+" in chat "+p.MessagingGroupID, p.ApproverUserID, "pending", when(p.CreatedAt))
					}
					for _, p := range chats {
						t.Row("chat", p.MessagingGroupID, p.AgentGroupID, "unwired chat "+p.MessagingGroupID, p.ApproverUserID, "pending", when(p.CreatedAt))
					}
				}
				return t.Write(a.Out)
			})
		},
	}
	c.Flags().StringVar((*string)(&st), "status", string(sessiondb.ApprovalPending), "action approvals with this status (sender and chat approvals are listed with pending)")
	return c
}

func (a *group) approvalsExpireCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "expire [ID...] [--yes]",
		Short: "Expire action approvals: the named ones now, or all past their time (7 days)",
		Long: `expire marks action approvals expired and tells their agents, as the host's
sweep does: with IDs, those now; without, every pending one past its expiry (or
older than 7 days), and unanswered questions older than 5 minutes. Asks first
on a terminal when IDs are given.`,
		Args: cli.MinimumArgs(0, "approval ids"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				r, err := a.router(reg, false)
				if err != nil {
					return err
				}
				if len(args) == 0 {
					res, err := r.Expire(ctx)
					if err != nil {
						return err
					}
					return a.done(res, "expired %d approval(s) and %d question(s)", res.Approvals, res.Questions)
				}
				if err := a.Confirm(yes, nil, fmt.Sprintf("Expire %d approval(s) now and tell their agents?", len(args))); err != nil {
					return err
				}
				var done []sessiondb.PendingApproval
				for _, id := range args {
					p, err := r.ExpireApproval(ctx, id)
					if err != nil {
						return err
					}
					done = append(done, p)
				}
				return a.done(done, "expired %d approval(s)", len(done))
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

func (a *group) questionsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "questions",
		Short: "Agents' pending question cards: list, expire",
	}, a.questionsListCmd(), a.questionsExpireCmd())
}

func (a *group) questionsListCmd() *cobra.Command {
	var session string
	c := &cobra.Command{
		Use:   "list [--session ID]",
		Short: "List pending questions, oldest first",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return list(a, c, func(ctx context.Context, reg sessiondb.Registry) ([]sessiondb.PendingQuestion, error) {
				return reg.ListQuestions(ctx, session)
			}, questionColumns)
		},
	}
	c.Flags().StringVar(&session, "session", "", "only this session's questions")
	return c
}

var questionColumns = cli.Columns[sessiondb.PendingQuestion]{
	Header: []string{"ID", "SESSION", "TITLE", "OPTIONS", "CHAT", "ASKED"},
	Cells: func(q sessiondb.PendingQuestion) []string {
		return []string{q.QuestionID, q.SessionID, q.Title, fmt.Sprint(len(q.Options)), cli.OrDash(q.ChannelType + " " + q.PlatformID), when(q.CreatedAt)}
	},
}

func (a *group) questionsExpireCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "expire [ID...] [--yes]",
		Short: "Withdraw question cards: the named ones now, or all older than 5 minutes",
		Args:  cli.MinimumArgs(0, "question ids"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				if len(args) == 0 {
					qs, err := reg.ExpireQuestions(ctx, a.Now().Add(-sessiondb.QuestionTTL))
					if err != nil {
						return err
					}
					return a.done(map[string]any{"expired": len(qs)}, "expired %d question(s)", len(qs))
				}
				if err := a.Confirm(yes, nil, fmt.Sprintf("Withdraw %d question(s)? A later click on them does nothing.", len(args))); err != nil {
					return err
				}
				for _, id := range args {
					ok, err := reg.DeleteQuestion(ctx, id)
					if err != nil {
						return err
					}
					if !ok {
						return sessiondb.NotFound("question", id)
					}
				}
				return a.done(map[string]any{"expired": len(args)}, "expired %d question(s)", len(args))
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

func (a *group) droppedCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "dropped",
		Short: "The dropped-message audit: list, prune",
		Long: `Every message that reached no agent is counted per chat with the reason that
decided it: no_agent_wired, no_agent_engaged, unknown_sender_strict,
unknown_sender_request_approval.`,
	}, a.droppedListCmd(), a.droppedPruneCmd())
}

func (a *group) droppedListCmd() *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "list [--limit N]",
		Short: "List chats with dropped messages, most recent first",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if limit < 1 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--limit %d: want 1 or more", limit)
			}
			return list(a, c, func(ctx context.Context, reg sessiondb.Registry) ([]sessiondb.DroppedSender, error) {
				return reg.ListDropped(ctx, limit)
			}, droppedColumns)
		},
	}
	c.Flags().IntVar(&limit, "limit", 50, "rows to show")
	return c
}

var droppedColumns = cli.Columns[sessiondb.DroppedSender]{
	Header: []string{"CHANNEL", "PLATFORM ID", "REASON", "COUNT", "LAST SENDER", "CHAT", "FIRST SEEN", "LAST SEEN"},
	Cells: func(d sessiondb.DroppedSender) []string {
		sender := d.UserID
		if d.SenderName != "" {
			sender = d.SenderName + " " + d.UserID
		}
		return []string{d.ChannelType, d.PlatformID, string(d.Reason), fmt.Sprint(d.MessageCount), cli.OrDash(sender), cli.OrDash(d.MessagingGroupID), when(d.FirstSeen), when(d.LastSeen)}
	},
}

func (a *group) droppedPruneCmd() *cobra.Command {
	var (
		older time.Duration
		yes   bool
	)
	c := &cobra.Command{
		Use:     "prune --older-than DURATION [--yes]",
		Short:   "Delete audit rows last seen longer ago than DURATION",
		Example: "  sessiondb admin dropped prune --older-than 720h",
		Args:    cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if older <= 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--older-than is required and must be positive, e.g. 720h")
			}
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				cutoff := a.Now().Add(-older)
				if err := a.Confirm(yes, nil, fmt.Sprintf("Delete the audit rows of chats last seen before %s?", when(cutoff))); err != nil {
					return err
				}
				n, err := reg.PruneDropped(ctx, cutoff)
				if err != nil {
					return err
				}
				return a.done(map[string]any{"pruned": n}, "pruned %d row(s)", n)
			})
		},
	}
	c.Flags().DurationVar(&older, "older-than", 0, "age of the rows to delete (e.g. 720h)")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}
