package sessiondb

import "strings"

// UsageSQL is what a backend tells ReadUsage (and UsageSums) about its
// SQL, so the usage queries, the split by model and the cost rule are
// written once for every backend.
type UsageSQL struct {
	// Mark is the placeholder of the n-th argument (from 1).
	Mark func(n int) string
	// Has reports whether the store's table has the column: an older
	// file lacks some of sessions' columns, only a newer Hermes' file has
	// session_model_usage, and its first shape lacks actual_cost_usd. A
	// column it lacks reads as 0. Nil: every column named exists.
	Has func(table, column string) bool
	// Exact is appended to a cost so that sums of it are exact (PostgreSQL:
	// "::numeric"); Float turns such a sum back into a float ("::double
	// precision"). Empty where floats are summed as they are (SQLite's
	// SUM compensates its rounding errors).
	Exact, Float string
	// Collate follows a text key so it sorts byte-wise (PostgreSQL:
	// ` COLLATE "C"`, as SQLite's BINARY).
	Collate string
	// Day is the UTC day ("2006-01-02") of s.started_at.
	Day string
	// Tiebreak ends Top's order after started_at (PostgreSQL: ", s.seq").
	Tiebreak string
}

// modelUsageTable is Hermes' per-model usage table (schema 20).
const modelUsageTable = "session_model_usage"

// usageCounters are the integer counters a usage row sums, by their
// column in sessions; session_model_usage names the same but for
// messages and tool calls, which it does not have.
var usageCounters = []string{"message_count", "tool_call_count", "api_call_count",
	"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"}

// usageNames are the columns of the split's intermediate rows, in
// usageCounters' order, then the two costs.
var usageNames = []string{"messages", "tool_calls", "api_calls", "input_tokens", "output_tokens",
	"cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "est", "act"}

func (d UsageSQL) has(table, col string) bool { return d.Has == nil || d.Has(table, col) }

func (d UsageSQL) hasModelUsage() bool { return d.has(modelUsageTable, "session_id") }

// col reads a counter of table alias a, 0 when the table lacks it.
func (d UsageSQL) col(table, a, name string) string {
	if !d.has(table, name) {
		return "0"
	}
	return "COALESCE(" + a + "." + name + ", 0)"
}

// cost reads a cost column of alias a for exact sums, 0 when missing.
func (d UsageSQL) cost(table, a, name string) string {
	if !d.has(table, name) {
		return "0"
	}
	return "COALESCE(" + a + "." + name + ", 0)" + d.Exact
}

// billed is CostRule's condition on a session of alias s: the provider
// reported a cost.
func (d UsageSQL) billed() string { return d.billedOf("s") }

func (d UsageSQL) billedOf(a string) string {
	if !d.has("sessions", "actual_cost_usd") {
		return "1 = 0"
	}
	return a + ".actual_cost_usd IS NOT NULL"
}

// SessionCostSQL is the SQL of what a session of alias a cost by CostRule
// (a float): the key a listing sorts by cost on.
func (d UsageSQL) SessionCostSQL(a string) string {
	est := "0.0"
	if d.has("sessions", "estimated_cost_usd") {
		est = "COALESCE(" + a + ".estimated_cost_usd, 0)"
	}
	if !d.has("sessions", "actual_cost_usd") {
		return est
	}
	return "COALESCE(" + a + ".actual_cost_usd, " + est + ")"
}

// SessionTokensSQL is the SQL of a session's tokens (see Tokens: input +
// output) of alias a: the key a listing sorts by tokens on.
func (d UsageSQL) SessionTokensSQL(a string) string {
	return "(" + d.col("sessions", a, "input_tokens") + " + " + d.col("sessions", a, "output_tokens") + ")"
}

func (d UsageSQL) sum(x string) string { return "COALESCE(SUM(" + x + "), 0)" }

func (d UsageSQL) sumCost(x string) string {
	if d.Float == "" {
		return d.sum(x)
	}
	return "COALESCE((SUM(" + x + "))" + d.Float + ", 0)"
}

// sessionValues are one session's columns of a usage row, alias s, after
// its key and title: Sessions, the counters, the two costs as stored, and
// its cost by CostRule with the part of it that is estimated. agg wraps
// each (a sum, or nothing).
func (d UsageSQL) sessionValues(sessions string, agg, aggCost func(string) string) string {
	parts := []string{sessions}
	for _, c := range usageCounters {
		parts = append(parts, agg(d.col("sessions", "s", c)))
	}
	est, act, billed := d.cost("sessions", "s", "estimated_cost_usd"), d.cost("sessions", "s", "actual_cost_usd"), d.billed()
	parts = append(parts, aggCost(est), aggCost(act),
		aggCost("CASE WHEN "+billed+" THEN "+act+" ELSE "+est+" END"),
		aggCost("CASE WHEN "+billed+" THEN 0 ELSE "+est+" END"))
	return strings.Join(parts, ", ")
}

// UsageSums is the select list, after a key and a title, that sums the
// sessions of alias s into a UsageRow (ScanUsageRow reads it): for a
// backend's own groupings of sessions, such as a compression chain's
// totals.
func UsageSums(d UsageSQL) string {
	return d.sessionValues("count(*)", d.sum, d.sumCost)
}

// usageOrder orders groups by cost (CostRule, the 14th column), then key.
const usageOrder = " ORDER BY 14 DESC, 1"

func (d UsageSQL) totalSQL(cond string) string {
	return "SELECT '', '', " + UsageSums(d) + " FROM sessions s" + cond
}

func (d UsageSQL) groupSQL(key, cond string) string {
	return "SELECT " + key + ", '', " + UsageSums(d) + " FROM sessions s" + cond + " GROUP BY 1" + usageOrder
}

func (d UsageSQL) byDaySQL(cond string) string {
	return "SELECT " + d.Day + ", '', " + UsageSums(d) + " FROM sessions s" + cond + " GROUP BY 1 ORDER BY 1"
}

func (d UsageSQL) topSQL(cond string, limitArg int) string {
	title := "''"
	if d.has("sessions", "title") {
		title = "COALESCE(s.title, '')"
	}
	id := func(x string) string { return x }
	float := func(x string) string {
		if d.Float == "" {
			return x
		}
		return "(" + x + ")" + d.Float
	}
	return "SELECT s.id, " + title + ", " + d.sessionValues("1", id, float) + " FROM sessions s" + cond +
		" ORDER BY 14 DESC, " + d.col("sessions", "s", "input_tokens") + " + " + d.col("sessions", "s", "output_tokens") +
		" DESC, s.started_at DESC" + d.Tiebreak + " LIMIT " + d.Mark(limitArg)
}

// usedEpsilon is the least cost, in dollars, that makes a session's
// remainder beyond its usage rows count as spending: float sums of the
// same calls may differ in their last bits.
const usedEpsilon = "0.000000001"

// byModelSQL splits the sessions cond selects across their models, as
// Hermes' insights do (InsightsEngine._compute_model_breakdown): each
// session_model_usage row to its model, and each session's remainder (its
// totals beyond its rows, per counter and cost, never below 0; all of it
// without the table) to the session's model. A session counts under a
// model when it has a row there or a remainder that is not all zero;
// messages and tool calls go to the session's model. Costs by CostRule:
// a billed session's parts count their actual cost, an unbilled one's
// their estimate.
func (d UsageSQL) byModelSQL(cond string) string {
	var b strings.Builder
	b.WriteString("WITH ss AS (SELECT s.id, COALESCE(s.model, '') AS model, CASE WHEN " + d.billed() + " THEN 1 ELSE 0 END AS billed")
	for i, c := range usageCounters {
		b.WriteString(", " + d.col("sessions", "s", c) + " AS " + usageNames[i])
	}
	b.WriteString(", " + d.cost("sessions", "s", "estimated_cost_usd") + " AS est, " + d.cost("sessions", "s", "actual_cost_usd") + " AS act FROM sessions s" + cond + ")")
	split := d.hasModelUsage()
	// The usage rows' columns: every counter but messages and tool calls.
	rowCols := usageNames[2:]
	if split {
		b.WriteString(",\nmu AS (SELECT u.session_id, u.model")
		for i, c := range usageCounters[2:] {
			b.WriteString(", " + d.sum(d.col(modelUsageTable, "u", c)) + " AS " + rowCols[i])
		}
		b.WriteString(", SUM(" + d.cost(modelUsageTable, "u", "estimated_cost_usd") + ") AS est, SUM(" + d.cost(modelUsageTable, "u", "actual_cost_usd") +
			") AS act FROM " + modelUsageTable + " u JOIN ss ON ss.id = u.session_id GROUP BY u.session_id, u.model),\n")
		b.WriteString("mt AS (SELECT session_id")
		for _, c := range rowCols {
			b.WriteString(", SUM(" + c + ") AS " + c)
		}
		b.WriteString(" FROM mu GROUP BY session_id)")
	}
	// r: each session's remainder beyond its rows.
	b.WriteString(",\nr AS (SELECT ss.id AS session_id, ss.model, ss.messages, ss.tool_calls")
	for _, c := range rowCols {
		x := "ss." + c
		if split {
			x = "CASE WHEN ss." + c + " > COALESCE(mt." + c + ", 0) THEN ss." + c + " - COALESCE(mt." + c + ", 0) ELSE 0 END"
		}
		b.WriteString(", " + x + " AS " + c)
	}
	b.WriteString(" FROM ss")
	if split {
		b.WriteString(" LEFT JOIN mt ON mt.session_id = ss.id")
	}
	b.WriteString("),\np AS (")
	if split {
		b.WriteString("SELECT session_id, model, 1 AS used, 0 AS messages, 0 AS tool_calls, " + strings.Join(rowCols, ", ") + " FROM mu UNION ALL ")
	}
	b.WriteString("SELECT session_id, model, CASE WHEN " + strings.Join(rowCols[:len(rowCols)-2], " + ") + " > 0 OR est > " + usedEpsilon +
		" OR act > " + usedEpsilon + " THEN 1 ELSE 0 END AS used, messages, tool_calls, " + strings.Join(rowCols, ", ") + " FROM r)\n")
	used := "COUNT(DISTINCT CASE WHEN p.used = 1 THEN p.session_id END)"
	b.WriteString("SELECT p.model" + d.Collate + ", '', " + used)
	for _, c := range usageNames[:len(usageNames)-2] {
		b.WriteString(", " + d.sum("p."+c))
	}
	b.WriteString(", " + d.sumCost("p.est") + ", " + d.sumCost("p.act") +
		", " + d.sumCost("CASE WHEN ss.billed = 1 THEN p.act ELSE p.est END") +
		", " + d.sumCost("CASE WHEN ss.billed = 1 THEN 0 ELSE p.est END") +
		" FROM p JOIN ss ON ss.id = p.session_id GROUP BY 1 HAVING " + used + " > 0 OR SUM(p.messages) > 0 OR SUM(p.tool_calls) > 0" + usageOrder)
	return b.String()
}
