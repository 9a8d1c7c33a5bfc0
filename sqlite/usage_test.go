package sqlite

import (
	"context"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// Usage reads what a file has: an older file opened read-only lacks the
// cost and cache columns (before v5) and the title (before v3), which
// read as 0 and "" instead of failing with "no such column" (issue 19).
func TestUsageOnOlderFilesReadOnly(t *testing.T) {
	ctx := context.Background()
	for v := 1; v <= 5; v++ {
		path := buildFixture(t, v, true)
		sqlitetest.ExecFile(t, path, "UPDATE sessions SET model = 'm', input_tokens = 10, output_tokens = 2 WHERE id = 'old1'")
		s := openTestStore(t, path, Options{ReadOnly: true})
		rep, err := s.Usage(ctx, sessiondb.UsageFilter{})
		if err != nil {
			t.Fatalf("v%d: Usage: %v", v, err)
		}
		wantTitle := ""
		if v >= 3 {
			wantTitle = "first"
		}
		if rep.Total.Sessions != 2 || rep.Total.Tokens() != 12 || len(rep.ByModel) != 1 || rep.ByModel[0].Key != "m" ||
			len(rep.Top) != 2 || rep.Top[0].Key != "old1" || rep.Top[0].Title != wantTitle || rep.ModelUsageRows {
			t.Errorf("v%d: total %+v, by model %+v, top %+v", v, rep.Total, rep.ByModel, rep.Top)
		}
	}
}

// A file whose session_model_usage the first v20 code made has no
// actual_cost_usd there: its rows split by model all the same, their
// actual cost read as 0.
func TestUsageByModelOfTheFirstUsageShape(t *testing.T) {
	path := firstUsageShapeFile(t)
	sqlitetest.ExecFile(t, path, `INSERT INTO sessions (id, source, started_at, model, input_tokens, output_tokens, estimated_cost_usd, actual_cost_usd)
    VALUES ('s', 'cli', 1, 'b', 30, 3, 0.3, 0.25)`)
	sqlitetest.ExecFile(t, path, `INSERT INTO session_model_usage (session_id, model, input_tokens, estimated_cost_usd)
    VALUES ('s', 'a', 10, 0.1), ('s', 'b', 20, 0.2)`)
	s := openTestStore(t, path, Options{ReadOnly: true})
	rep, err := s.Usage(context.Background(), sessiondb.UsageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// b's rows hold 20 input tokens and 0.2 of estimate; the session's
	// remainder (3 output tokens, its billed 0.25) goes to b too. Billed,
	// the session's parts count their actual cost: all of it b's.
	checkUsage(t, "ByModel", rep.ByModel, []sessiondb.UsageRow{
		{Key: "b", Sessions: 1, InputTokens: 20, OutputTokens: 3, EstimatedCostUSD: 0.2, ActualCostUSD: 0.25, CostUSD: 0.25},
		{Key: "a", Sessions: 1, InputTokens: 10, EstimatedCostUSD: 0.1},
	})
}

func checkUsage(t *testing.T, what string, got, want []sessiondb.UsageRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %+v\nwant %+v", what, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s[%d] = %+v\nwant %+v", what, i, got[i], want[i])
		}
	}
}

// firstUsageShapeFile is an empty schema-21 file whose session_model_usage
// has the shape the first v20 code made it in: keyed by session, model and
// provider, without billing_mode, actual_cost_usd, cost_status or
// cost_source.
func firstUsageShapeFile(t *testing.T) string {
	t.Helper()
	path := hermes21Empty(t)
	sqlitetest.ExecFile(t, path, "DROP TABLE session_model_usage")
	sqlitetest.ExecFile(t, path, `CREATE TABLE session_model_usage (
    session_id TEXT NOT NULL REFERENCES sessions(id), model TEXT NOT NULL, billing_provider TEXT NOT NULL DEFAULT '',
    billing_base_url TEXT, api_call_count INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0, cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0, reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd REAL NOT NULL DEFAULT 0, first_seen REAL, last_seen REAL,
    PRIMARY KEY (session_id, model, billing_provider))`)
	return path
}
