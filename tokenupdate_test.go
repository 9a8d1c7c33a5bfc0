package sessiondb_test

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// tokenRow reads the columns a TokenUpdate writes, NULL as "-".
func tokenRow(t *testing.T, db *sql.DB, id string) []string {
	t.Helper()
	var cols [15]sql.NullString
	var costs [2]sql.NullFloat64 // columns 5 and 6, read as numbers whatever the driver prints
	dest := make([]any, len(cols))
	for i := range cols {
		dest[i] = &cols[i]
	}
	dest[5], dest[6] = &costs[0], &costs[1]
	err := db.QueryRow(`SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
    estimated_cost_usd, actual_cost_usd, cost_status, cost_source, pricing_version,
    billing_provider, billing_base_url, billing_mode, model, id FROM sessions WHERE id = ?`, id).Scan(dest...)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = "-"
		if c.Valid {
			out[i] = c.String
		}
	}
	for i, c := range costs {
		out[5+i] = "-"
		if c.Valid {
			out[5+i] = strconv.FormatFloat(c.Float64, 'g', -1, 64)
		}
	}
	return out
}

func TestTokenUpdateStatement(t *testing.T) {
	db, err := sqlitedb.Open(sqlitedb.Config{Path: filepath.Join(t.TempDir(), "t.db"), MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE sessions (id TEXT PRIMARY KEY, input_tokens INTEGER, output_tokens INTEGER,
    cache_read_tokens INTEGER, cache_write_tokens INTEGER, reasoning_tokens INTEGER, estimated_cost_usd REAL,
    actual_cost_usd REAL, cost_status TEXT, cost_source TEXT, pricing_version TEXT, billing_provider TEXT,
    billing_base_url TEXT, billing_mode TEXT, model TEXT);
INSERT INTO sessions (id, model) VALUES ('s', 'first-model'), ('other', NULL)`); err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	num := func(f float64) *float64 { return &f }
	param := func(n int, _ bool) string { return "?" + strconv.Itoa(n) }
	apply := func(u sessiondb.TokenUpdate) {
		t.Helper()
		q, args := u.Statement("s", param)
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	apply(sessiondb.TokenUpdate{Input: 10, Output: 5, CacheRead: 1, CacheWrite: 2, Reasoning: 3,
		EstimatedCostUSD: num(0.5), CostStatus: str("estimated"), BillingProvider: str("anthropic"), Model: str("second-model")})
	apply(sessiondb.TokenUpdate{Input: 1, Output: 1, EstimatedCostUSD: num(0.25), ActualCostUSD: num(1),
		CostSource: str("api"), BillingProvider: str("openai"), BillingMode: str("batch")})
	want := []string{"11", "6", "1", "2", "3", "0.75", "1", "estimated", "api", "-", "anthropic", "-", "batch", "first-model", "s"}
	if got := tokenRow(t, db, "s"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after two additive updates:\n got %v\nwant %v", got, want)
	}

	apply(sessiondb.TokenUpdate{Absolute: true, Input: 7, Output: 8, PricingVersion: str("v2")})
	want = []string{"7", "8", "0", "0", "0", "0", "1", "estimated", "api", "v2", "anthropic", "-", "batch", "first-model", "s"}
	if got := tokenRow(t, db, "s"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after an absolute update without an actual cost:\n got %v\nwant %v", got, want)
	}
	if got := tokenRow(t, db, "other"); strings.Join(got[:14], ",") != strings.Repeat("-,", 13)+"-" {
		t.Fatalf("another session changed: %v", got)
	}

	q, _ := sessiondb.TokenUpdate{}.Statement("s", func(n int, cost bool) string {
		if cost {
			return "$" + strconv.Itoa(n) + "::double precision"
		}
		return "$" + strconv.Itoa(n)
	})
	if !strings.Contains(q, "COALESCE($6::double precision, 0)") || !strings.Contains(q, "WHERE id = $15") || strings.Contains(q, "{") {
		t.Fatalf("PostgreSQL placeholders not all filled in:\n%s", q)
	}
}
