package mailbox

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// EnqueueTask schedules a kind='task' row and returns its id and seq. A
// non-empty Recurrence must parse (ParseRecurrence). ProcessAfter defaults
// to now.
func (h *Host) EnqueueTask(ctx context.Context, ref SessionRef, t Task) (id string, seq int64, err error) {
	id = t.ID
	if id == "" {
		id = NewID("task", h.now())
	}
	pa := t.ProcessAfter
	if pa.IsZero() {
		pa = h.now()
	}
	content := &object{vals: map[string]json.RawMessage{}}
	content.set("prompt", marshalCompact(t.Prompt))
	if t.Script != nil {
		content.set("script", marshalCompact(*t.Script))
	} else {
		content.set("script", json.RawMessage("null"))
	}
	seq, _, err = h.Enqueue(ctx, ref, InboundMessage{
		ID: id, Kind: KindTask, Content: content.marshal(), Routing: t.Routing,
		ProcessAfter: pa, Recurrence: t.Recurrence,
	})
	return id, seq, err
}

const liveTask = `(id = ? OR series_id = ?) AND kind = 'task'`

func (h *Host) taskUpdate(ctx context.Context, ref SessionRef, id, set, where string) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	if id == "" {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "task id is empty")
	}
	var n int64
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		res, err := tx.Exec("UPDATE messages_in SET "+set+" WHERE "+liveTask+" AND "+where, id, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// CancelTask completes the live (pending or paused) rows of the task series
// named by id and clears their recurrence. It returns the rows touched.
func (h *Host) CancelTask(ctx context.Context, ref SessionRef, id string) (int, error) {
	return h.taskUpdate(ctx, ref, id, "status = 'completed', recurrence = NULL", "status IN ('pending', 'paused')")
}

// PauseTask pauses the pending rows of the series; returns rows touched.
func (h *Host) PauseTask(ctx context.Context, ref SessionRef, id string) (int, error) {
	return h.taskUpdate(ctx, ref, id, "status = 'paused'", "status = 'pending'")
}

// ResumeTask makes the paused rows of the series pending; returns rows
// touched.
func (h *Host) ResumeTask(ctx context.Context, ref SessionRef, id string) (int, error) {
	return h.taskUpdate(ctx, ref, id, "status = 'pending'", "status = 'paused'")
}

// UpdateTask applies u to the live rows of the series: prompt and script are
// merged into the content JSON (other keys kept); process_after and
// recurrence are set or cleared. It returns the rows touched.
func (h *Host) UpdateTask(ctx context.Context, ref SessionRef, id string, u TaskUpdate) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	if id == "" {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "task id is empty")
	}
	if u.Recurrence != nil && *u.Recurrence != "" {
		if _, err := ParseRecurrence(*u.Recurrence); err != nil {
			return 0, err
		}
	}
	n := 0
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		n = 0
		type live struct{ id, content string }
		ls, err := collect(tx, "SELECT id, content FROM messages_in WHERE "+liveTask+" AND status IN ('pending', 'paused')", []any{id, id}, func(row sqlitedb.Row) (live, error) {
			var l live
			err := row.Scan(&l.id, &l.content)
			return l, err
		})
		if err != nil {
			return err
		}
		for _, l := range ls {
			o, err := parseObject("stored content of "+l.id, []byte(l.content))
			if err != nil {
				o = &object{vals: map[string]json.RawMessage{}}
			}
			if u.Prompt != nil {
				o.set("prompt", marshalCompact(*u.Prompt))
			}
			switch {
			case u.ClearScript:
				o.set("script", json.RawMessage("null"))
			case u.Script != nil:
				o.set("script", marshalCompact(*u.Script))
			}
			set := []string{"content = ?"}
			args := []any{string(o.marshal())}
			switch {
			case u.ClearProcessAfter:
				set = append(set, "process_after = NULL")
			case u.ProcessAfter != nil:
				set = append(set, "process_after = ?")
				args = append(args, FormatTime(*u.ProcessAfter))
			}
			switch {
			case u.ClearRecurrence || (u.Recurrence != nil && *u.Recurrence == ""):
				set = append(set, "recurrence = NULL")
			case u.Recurrence != nil:
				set = append(set, "recurrence = ?")
				args = append(args, *u.Recurrence)
			}
			args = append(args, l.id)
			if _, err := tx.Exec("UPDATE messages_in SET "+strings.Join(set, ", ")+" WHERE id = ?", args...); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
