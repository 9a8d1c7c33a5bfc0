package bench

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// stmtRecorder is a pgx tracer that keeps the statements a PostgreSQL
// store sends while it is armed: the bench arms it around one search of
// each kind and then asks the server for each statement's plan.
type stmtRecorder struct {
	// armed is read on every statement of the timed phases, so it is an
	// atomic, not the mutex's.
	armed atomic.Bool
	mu    sync.Mutex
	got   []recordedStmt
}

type recordedStmt struct {
	sql  string
	args []any
}

func (r *stmtRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if r.armed.Load() {
		r.mu.Lock()
		r.got = append(r.got, recordedStmt{d.SQL, d.Args})
		r.mu.Unlock()
	}
	return ctx
}

func (r *stmtRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// record runs fn with the recorder armed and returns what it sent.
func (r *stmtRecorder) record(fn func() error) ([]recordedStmt, error) {
	r.mu.Lock()
	r.got = nil
	r.mu.Unlock()
	r.armed.Store(true)
	err := fn()
	r.armed.Store(false)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got, err
}

// searchPlans asks the server for the plan of every SELECT the store sends
// for the first query of each kind (EXPLAIN, not run) and gives each as a
// line of its nodes, outermost first, with the relation or index each
// reads: enough to see that a search stays on its GIN indexes.
func (b *bencher) searchPlans(ctx context.Context, st sessiondb.Store, url string) (map[string][]string, error) {
	if b.pgTrace == nil {
		return nil, nil
	}
	raw, err := openRawPG(ctx, url)
	if err != nil {
		return nil, err
	}
	defer raw.close()
	conn := raw.conn
	out := map[string][]string{}
	for _, q := range b.wl.queries {
		if _, done := out[q.Kind]; done {
			continue
		}
		stmts, err := b.pgTrace.record(func() error {
			_, err := st.SearchMessages(ctx, q.Q, sessiondb.SearchFilter{Limit: searchLimit})
			return err
		})
		if err != nil {
			return nil, sessiondb.Wrap("", err, "search %q", q.Q)
		}
		plans := []string{}
		for _, s := range stmts {
			head := strings.ToUpper(strings.Fields(s.sql + " x")[0])
			if head != "SELECT" && head != "WITH" {
				continue
			}
			var raw string
			if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+s.sql, s.args...).Scan(&raw); err != nil {
				return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "explain a statement of search %q", q.Q)
			}
			plans = append(plans, planLine(raw))
		}
		out[q.Kind] = plans
	}
	return out, nil
}

// planLine turns EXPLAIN's JSON into one line: each node as its type and
// what it reads ("Bitmap Index Scan messages_fts"), children in brackets.
func planLine(raw string) string {
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil || len(doc) == 0 {
		return "unreadable plan"
	}
	var b strings.Builder
	var walk func(n planNode)
	walk = func(n planNode) {
		b.WriteString(n.NodeType)
		for _, s := range []string{n.IndexName, n.RelationName} {
			if s != "" {
				b.WriteString(" " + s)
				break
			}
		}
		if len(n.Plans) > 0 {
			b.WriteString(" [")
			for i, c := range n.Plans {
				if i > 0 {
					b.WriteString(", ")
				}
				walk(c)
			}
			b.WriteString("]")
		}
	}
	walk(doc[0].Plan)
	return b.String()
}

type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	Plans        []planNode `json:"Plans"`
}
