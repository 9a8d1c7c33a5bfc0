package regsql

import (
	"context"
	"encoding/json"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Agent questions and approvals (spec A7).

// optionsJSON encodes a card's options as stored.
func optionsJSON(opts []sessiondb.QuestionOption) (string, error) {
	b, err := json.Marshal(opts)
	return string(b), err
}

// readOptions reads stored options; NanoClaw may have stored them raw
// (strings), and a value no reader understands reads as no options
// rather than failing the whole row.
func readOptions(s string) []sessiondb.QuestionOption {
	opts, err := sessiondb.NormalizeOptions(json.RawMessage(s))
	if err != nil {
		return []sessiondb.QuestionOption{}
	}
	return opts
}

// rawJSON returns stored JSON text as it is, or as a JSON string when it
// is not valid JSON (written by another program), so a listing never
// emits broken JSON.
func rawJSON(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

const questionCols = "question_id, session_id, message_out_id, channel_type, platform_id, thread_id, title, options_json, created_at"

func scanQuestion(r Scanner) (sessiondb.PendingQuestion, error) {
	var q sessiondb.PendingQuestion
	var opts string
	err := r.Scan(&q.QuestionID, &q.SessionID, &q.MessageOutID, intoText(&q.ChannelType), intoText(&q.PlatformID), intoText(&q.ThreadID), &q.Title, &opts, IntoTime(&q.CreatedAt))
	q.Options = readOptions(opts)
	return q, err
}

// AddQuestion implements sessiondb.ApprovalService.
func (c *Registry) AddQuestion(ctx context.Context, n sessiondb.NewQuestion) (bool, error) {
	if err := n.Validate(); err != nil {
		return false, err
	}
	if n.MessageOutID == "" {
		n.MessageOutID = n.QuestionID
	}
	opts, err := optionsJSON(n.Options)
	if err != nil {
		return false, sessiondb.Wrap(sessiondb.EINVALID, err, "options")
	}
	added := false
	err = c.write(ctx, "add question", func(tx Tx) error {
		if err := mustExist(tx.Context(), tx, "session", "sessions", n.SessionID); err != nil {
			return err
		}
		m, err := Changed(tx, "INSERT INTO pending_questions ("+questionCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
			n.QuestionID, n.SessionID, n.MessageOutID, nullText(n.ChannelType), nullText(n.PlatformID), nullText(n.ThreadID), n.Title, opts, c.stamp())
		added = m > 0
		return err
	})
	return added, err
}

// GetQuestion implements sessiondb.ApprovalService.
func (c *Registry) GetQuestion(ctx context.Context, id string) (sessiondb.PendingQuestion, error) {
	return one(c, ctx, c.rq, "question", id, "SELECT "+questionCols+" FROM pending_questions WHERE question_id = ?", []any{id}, scanQuestion)
}

// ListQuestions implements sessiondb.ApprovalService.
func (c *Registry) ListQuestions(ctx context.Context, sessionID string) ([]sessiondb.PendingQuestion, error) {
	var w where
	w.equal("session_id", sessionID)
	return listByTime(ctx, c, c.rq, "questions", "SELECT "+questionCols+" FROM pending_questions"+w.String()+" ORDER BY question_id", w.args,
		scanQuestion, func(q sessiondb.PendingQuestion) time.Time { return q.CreatedAt })
}

// deleteOne runs a DELETE and reports whether it removed a row.
func (c *Registry) deleteOne(ctx context.Context, what, query string, args ...any) (bool, error) {
	n, err := c.changeRows(ctx, what, query, args...)
	return n > 0, err
}

// DeleteQuestion implements sessiondb.ApprovalService.
func (c *Registry) DeleteQuestion(ctx context.Context, id string) (bool, error) {
	return c.deleteOne(ctx, "delete question", "DELETE FROM pending_questions WHERE question_id = ?", id)
}

// ExpireQuestions implements sessiondb.ApprovalService. Rows are compared
// by their parsed created_at, whatever form another program wrote.
func (c *Registry) ExpireQuestions(ctx context.Context, cutoff time.Time) ([]sessiondb.PendingQuestion, error) {
	return sweep(c, ctx, "expire questions", "SELECT "+questionCols+" FROM pending_questions ORDER BY question_id", scanQuestion,
		func(q *sessiondb.PendingQuestion) (string, []any) {
			if !q.CreatedAt.Before(cutoff) {
				return "", nil
			}
			return "DELETE FROM pending_questions WHERE question_id = ?", []any{q.QuestionID}
		})
}

// sweep reads the rows of query in one write transaction and runs, for
// each, the statement change returns with its arguments ("" leaves the
// row be; change may update the row it is given, as it is to be
// returned). It returns the rows whose statement changed one row: only
// those this sweep changed, for another host's sweep at the same moment
// reports the others.
func sweep[T any](c *Registry, ctx context.Context, what, query string, scan func(Scanner) (T, error), change func(*T) (string, []any)) ([]T, error) {
	var out []T
	err := c.write(ctx, what, func(tx Tx) error {
		rows, err := AppendRows(tx.Context(), tx, query, nil, nil, scan)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, r := range rows {
			stmt, args := change(&r)
			if stmt == "" {
				continue
			}
			if n, err := Changed(tx, stmt, args...); err != nil {
				return err
			} else if n == 1 {
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

const approvalCols = "approval_id, session_id, request_id, action, payload, agent_group_id, channel_type, platform_id, platform_message_id, expires_at, status, title, options_json, created_at"

func scanApproval(r Scanner) (sessiondb.PendingApproval, error) {
	var a sessiondb.PendingApproval
	var payload, status, opts string
	err := r.Scan(&a.ApprovalID, intoText(&a.SessionID), &a.RequestID, &a.Action, &payload, intoText(&a.AgentGroupID), intoText(&a.ChannelType),
		intoText(&a.PlatformID), intoText(&a.PlatformMessageID), IntoTime(&a.ExpiresAt), &status, &a.Title, &opts, IntoTime(&a.CreatedAt))
	a.Payload, a.Status, a.Options = rawJSON(payload), sessiondb.ApprovalStatus(status), readOptions(opts)
	return a, err
}

// AddApproval implements sessiondb.ApprovalService. The row records the
// agent group whose admins may answer: the session's unless n names one.
func (c *Registry) AddApproval(ctx context.Context, n sessiondb.NewApproval) (sessiondb.PendingApproval, error) {
	if err := n.Validate(); err != nil {
		return sessiondb.PendingApproval{}, err
	}
	now := c.now()
	if n.ApprovalID == "" {
		n.ApprovalID = sessiondb.NewID("appr", now)
	}
	if n.RequestID == "" {
		n.RequestID = n.ApprovalID
	}
	if len(n.Options) == 0 {
		n.Options = sessiondb.ApproveRejectOptions
	}
	if n.ExpiresAt.IsZero() {
		n.ExpiresAt = now.Add(sessiondb.ApprovalTTL)
	}
	opts, err := optionsJSON(n.Options)
	if err != nil {
		return sessiondb.PendingApproval{}, sessiondb.Wrap(sessiondb.EINVALID, err, "options")
	}
	var a sessiondb.PendingApproval
	err = c.write(ctx, "add approval", func(tx Tx) error {
		ctx := tx.Context()
		if n.SessionID != "" {
			ag, err := one(c, ctx, tx, "session", n.SessionID, "SELECT agent_group_id FROM sessions WHERE id = ?", []any{n.SessionID}, valueOf[string])
			if err != nil {
				return err
			}
			if n.AgentGroupID == "" {
				n.AgentGroupID = ag
			}
		}
		if n.AgentGroupID != "" {
			if err := mustExist(ctx, tx, "agent group", "agent_groups", n.AgentGroupID); err != nil {
				return err
			}
		}
		if taken, err := hasRow(ctx, tx, "SELECT 1 FROM pending_approvals WHERE approval_id = ?", n.ApprovalID); err != nil || taken {
			return orConflict(err, "approval id %q is taken", n.ApprovalID)
		}
		if _, err := tx.Exec("INSERT INTO pending_approvals ("+approvalCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
			n.ApprovalID, nullText(n.SessionID), n.RequestID, n.Action, string(n.Payload), nullText(n.AgentGroupID),
			nullText(n.ChannelType), nullText(n.PlatformID), nullText(n.PlatformMessageID), nullTime(n.ExpiresAt),
			n.Title, opts, sessiondb.FormatTimestamp(now)); err != nil {
			return err
		}
		var err error
		a, err = one(c, ctx, tx, "approval", n.ApprovalID, "SELECT "+approvalCols+" FROM pending_approvals WHERE approval_id = ?", []any{n.ApprovalID}, scanApproval)
		return err
	})
	return a, err
}

// GetApproval implements sessiondb.ApprovalService.
func (c *Registry) GetApproval(ctx context.Context, id string) (sessiondb.PendingApproval, error) {
	return one(c, ctx, c.rq, "approval", id, "SELECT "+approvalCols+" FROM pending_approvals WHERE approval_id = ?", []any{id}, scanApproval)
}

// ListApprovals implements sessiondb.ApprovalService.
func (c *Registry) ListApprovals(ctx context.Context, f sessiondb.ApprovalFilter) ([]sessiondb.PendingApproval, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var w where
	w.equal("status", string(f.Status))
	w.equal("action", f.Action)
	w.equal("agent_group_id", f.AgentGroupID)
	w.equal("session_id", f.SessionID)
	out, err := listByTime(ctx, c, c.rq, "approvals", "SELECT "+approvalCols+" FROM pending_approvals"+w.String()+" ORDER BY approval_id", w.args,
		scanApproval, func(a sessiondb.PendingApproval) time.Time { return a.CreatedAt })
	if err != nil {
		return nil, err
	}
	if limit := pageLimit(f.Limit); len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// SetApprovalCard implements sessiondb.ApprovalService.
func (c *Registry) SetApprovalCard(ctx context.Context, id, channelType, platformID, platformMessageID string) error {
	return c.changeOne(ctx, "record approval card", "approval", id, "UPDATE pending_approvals SET channel_type = ?, platform_id = ?, platform_message_id = ? WHERE approval_id = ?",
		nullText(channelType), nullText(platformID), nullText(platformMessageID), id)
}

// ResolveApproval implements sessiondb.ApprovalService.
func (c *Registry) ResolveApproval(ctx context.Context, id string, st sessiondb.ApprovalStatus) (sessiondb.PendingApproval, error) {
	if err := st.Validate(); err != nil {
		return sessiondb.PendingApproval{}, err
	}
	if st == sessiondb.ApprovalPending {
		return sessiondb.PendingApproval{}, sessiondb.Errorf(sessiondb.EINVALID, "status: an approval is resolved to approved, rejected or expired, not pending")
	}
	var a sessiondb.PendingApproval
	err := c.write(ctx, "resolve approval", func(tx Tx) error {
		ctx := tx.Context()
		var err error
		if a, err = one(c, ctx, tx, "approval", id, "SELECT "+approvalCols+" FROM pending_approvals WHERE approval_id = ?", []any{id}, scanApproval); err != nil {
			return err
		}
		if a.Status != sessiondb.ApprovalPending {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "approval %q is already %s", id, a.Status)
		}
		if _, err := tx.Exec("UPDATE pending_approvals SET status = ? WHERE approval_id = ? AND status = 'pending'", string(st), id); err != nil {
			return err
		}
		a.Status = st
		return nil
	})
	if err != nil {
		return sessiondb.PendingApproval{}, err
	}
	return a, nil
}

// DeleteApproval implements sessiondb.ApprovalService.
func (c *Registry) DeleteApproval(ctx context.Context, id string) (bool, error) {
	return c.deleteOne(ctx, "delete approval", "DELETE FROM pending_approvals WHERE approval_id = ?", id)
}

// ExpireApprovals implements sessiondb.ApprovalService.
func (c *Registry) ExpireApprovals(ctx context.Context, now time.Time, ttl time.Duration) ([]sessiondb.PendingApproval, error) {
	if ttl <= 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "ttl %s is not positive", ttl)
	}
	return sweep(c, ctx, "expire approvals", "SELECT "+approvalCols+" FROM pending_approvals WHERE status = 'pending' ORDER BY approval_id", scanApproval,
		func(a *sessiondb.PendingApproval) (string, []any) {
			due := a.ExpiresAt
			if due.IsZero() {
				due = a.CreatedAt.Add(ttl)
			}
			if due.After(now) {
				return "", nil
			}
			a.Status = sessiondb.ApprovalExpired
			return "UPDATE pending_approvals SET status = 'expired' WHERE approval_id = ? AND status = 'pending'", []any{a.ApprovalID}
		})
}

const senderApprovalCols = "id, messaging_group_id, agent_group_id, sender_identity, sender_name, original_message, approver_user_id, title, options_json, created_at"

func scanSenderApproval(r Scanner) (sessiondb.PendingSenderApproval, error) {
	var a sessiondb.PendingSenderApproval
	var msg, opts string
	err := r.Scan(&a.ID, &a.MessagingGroupID, &a.AgentGroupID, &a.SenderIdentity, intoText(&a.SenderName), &msg, &a.ApproverUserID, &a.Title, &opts, IntoTime(&a.CreatedAt))
	a.OriginalMessage, a.Options = rawJSON(msg), readOptions(opts)
	return a, err
}

// AddSenderApproval implements sessiondb.ApprovalService.
func (c *Registry) AddSenderApproval(ctx context.Context, n sessiondb.NewSenderApproval) (sessiondb.PendingSenderApproval, bool, error) {
	if err := n.Validate(); err != nil {
		return sessiondb.PendingSenderApproval{}, false, err
	}
	now := c.now()
	if n.ID == "" {
		n.ID = sessiondb.NewID("nsa", now)
	}
	if len(n.Options) == 0 {
		n.Options = sessiondb.AllowDenyOptions
	}
	opts, err := optionsJSON(n.Options)
	if err != nil {
		return sessiondb.PendingSenderApproval{}, false, sessiondb.Wrap(sessiondb.EINVALID, err, "options")
	}
	var a sessiondb.PendingSenderApproval
	added := false
	err = c.write(ctx, "add sender approval", func(tx Tx) error {
		ctx := tx.Context()
		found, err := AppendRows(ctx, tx, "SELECT "+senderApprovalCols+" FROM pending_sender_approvals WHERE messaging_group_id = ? AND sender_identity = ?",
			[]any{n.MessagingGroupID, n.SenderIdentity}, nil, scanSenderApproval)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			a, added = found[0], false
			return nil
		}
		if err := mustExist(ctx, tx, "messaging group", "messaging_groups", n.MessagingGroupID); err != nil {
			return err
		}
		if err := mustExist(ctx, tx, "agent group", "agent_groups", n.AgentGroupID); err != nil {
			return err
		}
		if taken, err := hasRow(ctx, tx, "SELECT 1 FROM pending_sender_approvals WHERE id = ?", n.ID); err != nil || taken {
			return orConflict(err, "sender approval id %q is taken", n.ID)
		}
		if _, err := tx.Exec("INSERT INTO pending_sender_approvals ("+senderApprovalCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			n.ID, n.MessagingGroupID, n.AgentGroupID, n.SenderIdentity, nullText(n.SenderName), string(n.OriginalMessage),
			n.ApproverUserID, n.Title, opts, sessiondb.FormatTimestamp(now)); err != nil {
			return err
		}
		a, err = one(c, ctx, tx, "sender approval", n.ID, "SELECT "+senderApprovalCols+" FROM pending_sender_approvals WHERE id = ?", []any{n.ID}, scanSenderApproval)
		added = err == nil
		return err
	})
	return a, added, err
}

// GetSenderApproval implements sessiondb.ApprovalService.
func (c *Registry) GetSenderApproval(ctx context.Context, id string) (sessiondb.PendingSenderApproval, error) {
	return one(c, ctx, c.rq, "sender approval", id, "SELECT "+senderApprovalCols+" FROM pending_sender_approvals WHERE id = ?", []any{id}, scanSenderApproval)
}

// ListSenderApprovals implements sessiondb.ApprovalService.
func (c *Registry) ListSenderApprovals(ctx context.Context, messagingGroupID string) ([]sessiondb.PendingSenderApproval, error) {
	var w where
	w.equal("messaging_group_id", messagingGroupID)
	return listByTime(ctx, c, c.rq, "sender approvals", "SELECT "+senderApprovalCols+" FROM pending_sender_approvals"+w.String()+" ORDER BY id", w.args,
		scanSenderApproval, func(a sessiondb.PendingSenderApproval) time.Time { return a.CreatedAt })
}

// DeleteSenderApproval implements sessiondb.ApprovalService.
func (c *Registry) DeleteSenderApproval(ctx context.Context, id string) (bool, error) {
	return c.deleteOne(ctx, "delete sender approval", "DELETE FROM pending_sender_approvals WHERE id = ?", id)
}

const channelApprovalCols = "messaging_group_id, agent_group_id, original_message, approver_user_id, title, options_json, created_at"

func scanChannelApproval(r Scanner) (sessiondb.PendingChannelApproval, error) {
	var a sessiondb.PendingChannelApproval
	var msg, opts string
	err := r.Scan(&a.MessagingGroupID, &a.AgentGroupID, &msg, &a.ApproverUserID, &a.Title, &opts, IntoTime(&a.CreatedAt))
	a.OriginalMessage, a.Options = rawJSON(msg), readOptions(opts)
	return a, err
}

// AddChannelApproval implements sessiondb.ApprovalService.
func (c *Registry) AddChannelApproval(ctx context.Context, p sessiondb.PendingChannelApproval) (sessiondb.PendingChannelApproval, bool, error) {
	if err := p.Validate(); err != nil {
		return sessiondb.PendingChannelApproval{}, false, err
	}
	opts, err := optionsJSON(p.Options)
	if err != nil {
		return sessiondb.PendingChannelApproval{}, false, sessiondb.Wrap(sessiondb.EINVALID, err, "options")
	}
	var a sessiondb.PendingChannelApproval
	added := false
	err = c.write(ctx, "add channel approval", func(tx Tx) error {
		ctx := tx.Context()
		found, err := AppendRows(ctx, tx, "SELECT "+channelApprovalCols+" FROM pending_channel_approvals WHERE messaging_group_id = ?",
			[]any{p.MessagingGroupID}, nil, scanChannelApproval)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			a, added = found[0], false
			return nil
		}
		if err := mustExist(ctx, tx, "messaging group", "messaging_groups", p.MessagingGroupID); err != nil {
			return err
		}
		if err := mustExist(ctx, tx, "agent group", "agent_groups", p.AgentGroupID); err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO pending_channel_approvals ("+channelApprovalCols+") VALUES (?, ?, ?, ?, ?, ?, ?)",
			p.MessagingGroupID, p.AgentGroupID, string(p.OriginalMessage), p.ApproverUserID, p.Title, opts, c.stamp()); err != nil {
			return err
		}
		a, err = one(c, ctx, tx, "channel approval", p.MessagingGroupID, "SELECT "+channelApprovalCols+" FROM pending_channel_approvals WHERE messaging_group_id = ?",
			[]any{p.MessagingGroupID}, scanChannelApproval)
		added = err == nil
		return err
	})
	return a, added, err
}

// GetChannelApproval implements sessiondb.ApprovalService.
func (c *Registry) GetChannelApproval(ctx context.Context, messagingGroupID string) (sessiondb.PendingChannelApproval, error) {
	return one(c, ctx, c.rq, "channel approval", messagingGroupID, "SELECT "+channelApprovalCols+" FROM pending_channel_approvals WHERE messaging_group_id = ?",
		[]any{messagingGroupID}, scanChannelApproval)
}

// ListChannelApprovals implements sessiondb.ApprovalService.
func (c *Registry) ListChannelApprovals(ctx context.Context) ([]sessiondb.PendingChannelApproval, error) {
	return listByTime(ctx, c, c.rq, "channel approvals", "SELECT "+channelApprovalCols+" FROM pending_channel_approvals ORDER BY messaging_group_id", nil,
		scanChannelApproval, func(a sessiondb.PendingChannelApproval) time.Time { return a.CreatedAt })
}

// UpdateChannelApprovalCard implements sessiondb.ApprovalService.
func (c *Registry) UpdateChannelApprovalCard(ctx context.Context, messagingGroupID, title string, options []sessiondb.QuestionOption) error {
	if err := sessiondb.CheckCard(title, options); err != nil {
		return err
	}
	opts, err := optionsJSON(options)
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINVALID, err, "options")
	}
	return c.changeOne(ctx, "update channel approval card", "channel approval", messagingGroupID,
		"UPDATE pending_channel_approvals SET title = ?, options_json = ? WHERE messaging_group_id = ?", title, opts, messagingGroupID)
}

// DeleteChannelApproval implements sessiondb.ApprovalService.
func (c *Registry) DeleteChannelApproval(ctx context.Context, messagingGroupID string) (bool, error) {
	return c.deleteOne(ctx, "delete channel approval", "DELETE FROM pending_channel_approvals WHERE messaging_group_id = ?", messagingGroupID)
}

// FindCard implements sessiondb.ApprovalService: the four lookups in one
// snapshot, in the order clicks are offered.
func (c *Registry) FindCard(ctx context.Context, id string) (sessiondb.Card, error) {
	var card sessiondb.Card
	err := c.read(ctx, "find card", func(q Querier) error {
		if s, err := AppendRows(ctx, q, "SELECT "+senderApprovalCols+" FROM pending_sender_approvals WHERE id = ?", []any{id}, nil, scanSenderApproval); err != nil || len(s) > 0 {
			if len(s) > 0 {
				card = sessiondb.Card{Kind: sessiondb.CardSenderApproval, Sender: &s[0]}
			}
			return err
		}
		if ch, err := AppendRows(ctx, q, "SELECT "+channelApprovalCols+" FROM pending_channel_approvals WHERE messaging_group_id = ?", []any{id}, nil, scanChannelApproval); err != nil || len(ch) > 0 {
			if len(ch) > 0 {
				card = sessiondb.Card{Kind: sessiondb.CardChannelApproval, Channel: &ch[0]}
			}
			return err
		}
		if a, err := AppendRows(ctx, q, "SELECT "+approvalCols+" FROM pending_approvals WHERE approval_id = ?", []any{id}, nil, scanApproval); err != nil || len(a) > 0 {
			if len(a) > 0 {
				card = sessiondb.Card{Kind: sessiondb.CardActionApproval, Action: &a[0]}
			}
			return err
		}
		qs, err := AppendRows(ctx, q, "SELECT "+questionCols+" FROM pending_questions WHERE question_id = ?", []any{id}, nil, scanQuestion)
		if len(qs) > 0 {
			card = sessiondb.Card{Kind: sessiondb.CardQuestion, Question: &qs[0]}
		}
		return err
	})
	if err != nil {
		return sessiondb.Card{}, err
	}
	if card.Kind == "" {
		return sessiondb.Card{}, sessiondb.NotFound("card", id)
	}
	return card, nil
}
