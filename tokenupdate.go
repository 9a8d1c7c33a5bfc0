package sessiondb

import (
	"strconv"
	"strings"
)

// tokenUpdateSQL is the rule of UpdateTokenCounts in SQL, with {n} for
// the n-th argument of TokenUpdate.Statement. Absolute sets the counters
// and the estimated cost (NULL as 0) and keeps the actual cost unless one
// is given; otherwise both add (NULL counting as 0, an actual cost not
// given leaving the column as it is). Cost status, source and pricing
// version take a given value; the billing fields and the model only fill
// what is NULL.
const (
	tokenSetSQL = `UPDATE sessions SET
    input_tokens = {1}, output_tokens = {2}, cache_read_tokens = {3}, cache_write_tokens = {4}, reasoning_tokens = {5},
    estimated_cost_usd = COALESCE({6}, 0),
    actual_cost_usd = COALESCE({7}, actual_cost_usd),`
	tokenAddSQL = `UPDATE sessions SET
    input_tokens = COALESCE(input_tokens, 0) + {1},
    output_tokens = COALESCE(output_tokens, 0) + {2},
    cache_read_tokens = COALESCE(cache_read_tokens, 0) + {3},
    cache_write_tokens = COALESCE(cache_write_tokens, 0) + {4},
    reasoning_tokens = COALESCE(reasoning_tokens, 0) + {5},
    estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + COALESCE({6}, 0),
    actual_cost_usd = CASE WHEN {7} IS NULL THEN actual_cost_usd ELSE COALESCE(actual_cost_usd, 0) + {7} END,`
	tokenRestSQL = `
    cost_status = COALESCE({8}, cost_status),
    cost_source = COALESCE({9}, cost_source),
    pricing_version = COALESCE({10}, pricing_version),
    billing_provider = COALESCE(billing_provider, {11}),
    billing_base_url = COALESCE(billing_base_url, {12}),
    billing_mode = COALESCE(billing_mode, {13}),
    model = COALESCE(model, {14})
WHERE id = {15}`
)

// Statement is UpdateTokenCounts' one UPDATE of session id, so every
// backend applies u alike (and concurrent updates from many processes all
// count), with its arguments (NULL for a field not given). param(n, cost)
// is the backend's placeholder of the n-th argument (from 1); cost marks
// the two costs, whose type PostgreSQL must be told when they are NULL.
func (u TokenUpdate) Statement(id string, param func(n int, cost bool) string) (string, []any) {
	q := tokenAddSQL
	if u.Absolute {
		q = tokenSetSQL
	}
	q += tokenRestSQL
	pairs := make([]string, 0, 30)
	for n := 1; n <= 15; n++ {
		pairs = append(pairs, "{"+strconv.Itoa(n)+"}", param(n, n == 6 || n == 7))
	}
	q = strings.NewReplacer(pairs...).Replace(q)
	return q, []any{u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Reasoning,
		orNull(u.EstimatedCostUSD), orNull(u.ActualCostUSD),
		orNull(u.CostStatus), orNull(u.CostSource), orNull(u.PricingVersion),
		orNull(u.BillingProvider), orNull(u.BillingBaseURL), orNull(u.BillingMode), orNull(u.Model), id}
}

// orNull is *p, or nil (NULL) for a nil p.
func orNull[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
