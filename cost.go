package sessiondb

import "strconv"

// CostRule is how sessiondb counts what usage cost, wherever a cost is
// shown (stats, the usage report, the session list, Analytics, MCP): a
// session's actual cost where a provider billed one (actual_cost_usd is
// set), else its estimate. Faces print it beside a cost so a reader knows
// which figures are estimates.
const CostRule = "actual where billed, else estimated"

// SessionCost is what s cost by CostRule, and whether that figure is an
// estimate (no actual cost recorded, a non-zero estimate).
func SessionCost(s *Session) (usd float64, estimated bool) {
	switch {
	case s.ActualCostUSD != nil:
		return *s.ActualCostUSD, false
	case s.EstimatedCostUSD != nil:
		return *s.EstimatedCostUSD, *s.EstimatedCostUSD != 0
	}
	return 0, false
}

// Tokens is what sessiondb calls a session's tokens, wherever a single
// figure is shown: input + output. Hermes counts cache reads and writes
// apart from input (input is the prompt's uncached part) and reasoning
// tokens as part of output, so the sum counts each token the model was
// newly given or wrote once; cache reads and writes are shown by their
// names beside it, never folded in.
func Tokens(input, output int64) int64 { return input + output }

// Tokens is s's input + output (see the function Tokens).
func (s *Session) Tokens() int64 { return Tokens(s.InputTokens, s.OutputTokens) }

// FormatUSD writes an amount of dollars as every face shows money: "$0";
// four decimals below a dollar ("$0.0825", since one agent turn often
// costs a fraction of a cent); cents from a dollar ("$12.50"); "<$0.0001"
// for a positive amount that would round to nothing. Full precision
// belongs to JSON numbers only.
func FormatUSD(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v < 0:
		return "-" + FormatUSD(-v)
	case v < 0.00005:
		return "<$0.0001"
	case v < 1:
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}
