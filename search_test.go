package sessiondb

import (
	"strings"
	"testing"
)

// TestPlanSearch holds the opening of every backend's SearchMessages: a
// bad window is invalid naming it, a blank query, an empty non-nil source
// list and a query the sanitizer empties search nothing (and the first two
// never reach the sanitizer), and a query that goes on is the sanitizer's
// text, its CJK flag taken from that text, with the default page size.
func TestPlanSearch(t *testing.T) {
	calls := 0
	upper := func(q string) string { calls++; return strings.ToUpper(strings.TrimSpace(q)) }

	_, ok, err := PlanSearch("docker", SearchFilter{Limit: -1}, upper)
	if ok || ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "limit -1") {
		t.Errorf("limit -1: ok=%v err=%v, want invalid naming the limit", ok, err)
	}
	_, ok, err = PlanSearch("docker", SearchFilter{Offset: -3}, upper)
	if ok || ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "offset -3") {
		t.Errorf("offset -3: ok=%v err=%v, want invalid naming the offset", ok, err)
	}
	for _, c := range []struct {
		query string
		f     SearchFilter
	}{{" \t\n", SearchFilter{}}, {"docker", SearchFilter{Sources: []string{}}}} {
		if _, ok, err := PlanSearch(c.query, c.f, upper); ok || err != nil {
			t.Errorf("%q %+v: ok=%v err=%v, want nothing to search", c.query, c.f, ok, err)
		}
	}
	if calls != 0 {
		t.Errorf("the sanitizer ran %d times for searches decided without it", calls)
	}
	if _, ok, err := PlanSearch("***", SearchFilter{}, func(string) string { return "" }); ok || err != nil {
		t.Errorf("query the sanitizer empties: ok=%v err=%v, want nothing to search", ok, err)
	}

	plan, ok, err := PlanSearch(" docker ", SearchFilter{Offset: 40, Sources: []string{"cli"}}, upper)
	want := SearchPlan{Query: "DOCKER", Limit: DefaultLimit, Offset: 40}
	if !ok || err != nil || plan != want {
		t.Errorf("plan = %+v ok=%v err=%v, want %+v", plan, ok, err, want)
	}
	plan, _, _ = PlanSearch("docker", SearchFilter{Limit: 5}, func(string) string { return "日本語" })
	if !plan.CJK || plan.Limit != 5 {
		t.Errorf("CJK from the sanitized text, limit 5: %+v", plan)
	}
	plan, _, _ = PlanSearch("日本語", SearchFilter{}, func(string) string { return "abc" })
	if plan.CJK {
		t.Errorf("CJK read from the raw query instead of the sanitized one: %+v", plan)
	}
}

// TestHermesTrigramQuery: when a newer Hermes' search takes its trigram
// index for a CJK query, and the expression it gives it.
func TestHermesTrigramQuery(t *testing.T) {
	for _, c := range []struct {
		q, want string
		ok      bool
	}{
		{"大别山", `"大别山"`, true},
		{`"部署大别山"`, `"部署大别山"`, true},
		{"大别山 or 项目组", `"大别山" or "项目组"`, true},
		{"大别山 deploy", `"大别山" "deploy"`, true},
		{"大别 山项目", "", false},   // a CJK term of two
		{"大别", "", false},       // fewer than three in all
		{"广西 OR 桂林", "", false}, // six in all, two a term
		{`say"大别山`, `"say""大别山"`, true},
	} {
		got, ok := HermesTrigramQuery(c.q)
		if got != c.want || ok != c.ok {
			t.Errorf("HermesTrigramQuery(%q) = %q, %v; want %q, %v", c.q, got, ok, c.want, c.ok)
		}
	}
}
