package postgres

import (
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// InsertAll inserts a batch of sessions in a handful of round trips, where
// Insert takes about ten a session (its savepoints, the parent's lookup,
// the session, a COPY, the id sequence, the usage rows): the sessions in
// one pipeline, the messages of all of them in one COPY per set of
// columns, the usage rows and the id sequence in a second pipeline
// (sessiondb.BulkImportTx). Either every message of the batch keeps its
// original id, or none has one and they take ids of the sequence, in one
// more round trip, in the order of the batch; with some of each it leaves
// the batch to the session-by-session path, which moves the sequence past
// kept ids before taking new ones. It gives up (done false, nothing written) at any
// failure too, so that the session-by-session path meets it and names the
// session it belongs to.
func (t importTx) InsertAll(ps []*sessiondb.PreparedImport, each func(tx sessiondb.ImportTx[*sessiondb.PreparedImport], i int, inserted bool, missingParent string) error) (bool, error) {
	maxID, withIDs, without, ok := messageIDs(ps)
	if !ok || (withIDs > 0 && without > 0) {
		return false, nil
	}
	ctx := t.ctx
	err := pgx.BeginFunc(ctx, t.tx, func(sp pgx.Tx) error {
		inserted, linked, err := insertSessions(sp, t, ps)
		if err != nil {
			return err
		}
		var newIDs []int64
		if without > 0 {
			if newIDs, err = takeIDs(sp, t, ps, inserted); err != nil {
				return err
			}
		}
		if err := copyAllMessages(sp, t, ps, inserted, newIDs); err != nil {
			return err
		}
		var after pgx.Batch
		for i, p := range ps {
			if !inserted[i] {
				continue
			}
			for _, u := range p.Usage {
				q, args := usageInsert(p.ID, u)
				after.Queue(q, args...)
			}
		}
		if maxID > 0 {
			after.Queue(advanceSequenceSQL, maxID)
		}
		if err := sp.SendBatch(ctx, &after).Close(); err != nil {
			return err
		}
		nested := importTx{ctx, t.s, sp}
		for i, p := range ps {
			missing := ""
			if inserted[i] && p.Parent != "" && !linked[i] {
				missing = p.Parent
			}
			if err := each(nested, i, inserted[i], missing); err != nil {
				return err
			}
		}
		return nil
	})
	return triedInSavepoint(err)
}

// messageIDs counts the messages of ps that keep their original id and
// those that have none, with the highest id kept; ok is false when an id
// is of another kind.
func messageIDs(ps []*sessiondb.PreparedImport) (maxID int64, withIDs, without int, ok bool) {
	for _, p := range ps {
		for _, m := range p.Messages {
			if id, isInt := m.ID.(int64); isInt {
				maxID, withIDs = max(maxID, id), withIDs+1
			} else if m.ID == nil {
				without++
			} else {
				return 0, 0, 0, false
			}
		}
	}
	return maxID, withIDs, without, true
}

// insertSessions inserts each session of ps in one pipeline, each with its
// parent where the parent is in the store by then (a parent earlier in the
// batch is: the statements run in order). It reports which were inserted
// (false: the id was taken) and which were linked to their parent.
func insertSessions(sp pgx.Tx, t importTx, ps []*sessiondb.PreparedImport) (inserted, linked []bool, err error) {
	var b pgx.Batch
	for _, p := range ps {
		cols, vals := p.Session.Cols, p.Session.Vals
		values := placeholders(1, len(cols))
		if p.Parent != "" {
			// The foreign key locks the parent as Insert's FOR KEY SHARE
			// does: one deleted meanwhile fails the batch, and the
			// session-by-session path then finds it missing.
			cols = append(cols[:len(cols):len(cols)], "parent_session_id")
			vals = append(vals[:len(vals):len(vals)], p.Parent)
			values += ", (SELECT id FROM sessions WHERE id = $" + itoa(len(vals)) + ")"
		}
		b.Queue("INSERT INTO sessions ("+strings.Join(cols, ", ")+") VALUES ("+values+
			") ON CONFLICT (id) DO NOTHING RETURNING parent_session_id IS NOT NULL", vals...)
	}
	res := sp.SendBatch(t.ctx, &b)
	inserted, linked = make([]bool, len(ps)), make([]bool, len(ps))
	for i := range ps {
		err := res.QueryRow().Scan(&linked[i])
		switch {
		case err == nil:
			inserted[i] = true
		case noRows(err):
			// taken: skipped, nothing changed
		default:
			res.Close()
			return nil, nil, err
		}
	}
	return inserted, linked, res.Close()
}

// takeIDs takes from the id sequence one id for each message of the
// inserted sessions of ps, in increasing order.
func takeIDs(sp pgx.Tx, t importTx, ps []*sessiondb.PreparedImport, inserted []bool) ([]int64, error) {
	n := 0
	for i, p := range ps {
		if inserted[i] {
			n += len(p.Messages)
		}
	}
	var ids []int64
	err := sp.QueryRow(t.ctx, "SELECT coalesce(array_agg(nextval(pg_get_serial_sequence('messages', 'id'))), '{}') FROM generate_series(1, $1)", n).Scan(&ids)
	if err == nil && len(ids) != n {
		err = sessiondb.Errorf(sessiondb.EINTERNAL, "took %d message ids from the sequence, asked for %d", len(ids), n)
	}
	slices.Sort(ids)
	return ids, err
}

// copyAllMessages copies the messages of the inserted sessions of ps, one
// COPY for each set of columns the messages carry, each with its own id or,
// given newIDs, the next of newIDs.
func copyAllMessages(sp pgx.Tx, t importTx, ps []*sessiondb.PreparedImport, inserted []bool, newIDs []int64) error {
	type run struct {
		names []string
		rows  [][]any
	}
	var runs []*run
	byCols := map[string]*run{}
	k := 0
	for i, p := range ps {
		if !inserted[i] {
			continue
		}
		for _, m := range p.Messages {
			cols, vals := importedColumns(m)
			key := strings.Join(cols, ",")
			r := byCols[key]
			if r == nil {
				r = &run{names: append([]string{"id", "session_id"}, cols...)}
				byCols[key] = r
				runs = append(runs, r)
			}
			id := m.ID
			if newIDs != nil {
				id, k = newIDs[k], k+1
			}
			r.rows = append(r.rows, append([]any{id, p.ID}, vals...))
		}
	}
	for _, r := range runs {
		if _, err := sp.CopyFrom(t.ctx, pgx.Identifier{"messages"}, r.names, pgx.CopyFromRows(r.rows)); err != nil {
			return err
		}
	}
	return nil
}
