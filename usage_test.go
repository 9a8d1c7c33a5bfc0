package sessiondb

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// usageLog is a UsageReader that records what it was asked and answers
// with one row naming the request; by "fail" it fails.
type usageLog struct {
	asked []string
	fail  string
}

func (u *usageLog) UsageGroups(_ context.Context, by UsageBreakdown, cond string, args []any) ([]UsageRow, error) {
	q := fmt.Sprintf("group %d%s %v", by, cond, args)
	u.asked = append(u.asked, q)
	if u.fail == "group" {
		return nil, Errorf(EINTERNAL, "usage: broken")
	}
	return []UsageRow{{Key: q}}, nil
}

func (u *usageLog) UsageTop(_ context.Context, cond string, args []any, limit int) ([]UsageRow, error) {
	q := fmt.Sprintf("top %d%s %v", limit, cond, args)
	u.asked = append(u.asked, q)
	return []UsageRow{{Key: q}}, nil
}

func dollar(n int) string { return fmt.Sprintf("$%d", n) }

func TestReadUsage(t *testing.T) {
	ctx := context.Background()
	u := &usageLog{}
	rep, err := ReadUsage(ctx, u, UsageFilter{}, dollar)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"group 0 []", "group 1 []", "group 2 []", "top 10 []"}
	if !reflect.DeepEqual(u.asked, want) {
		t.Fatalf("everything: asked %q, want %q", u.asked, want)
	}
	if rep.ByModel[0].Key != want[0] || rep.BySource[0].Key != want[1] || rep.ByDay[0].Key != want[2] || rep.Top[0].Key != want[3] {
		t.Fatalf("rows in the wrong lists: %+v", rep)
	}

	u = &usageLog{}
	if _, err := ReadUsage(ctx, u, UsageFilter{Source: "cli", Since: 1700000000, Top: 3}, dollar); err != nil {
		t.Fatal(err)
	}
	cond := " WHERE source = $1 AND started_at >= $2 [cli 1.7e+09]"
	if want := "group 0" + cond; u.asked[0] != want || u.asked[3] != "top 3"+cond {
		t.Fatalf("source and since: asked %q, want %q first and top 3 last", u.asked, want)
	}

	u = &usageLog{}
	rep, err = ReadUsage(ctx, u, UsageFilter{Since: 5, Top: -1}, func(int) string { return "?" })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"group 0 WHERE started_at >= ? [5]", "group 1 WHERE started_at >= ? [5]", "group 2 WHERE started_at >= ? [5]"}; !reflect.DeepEqual(u.asked, want) {
		t.Fatalf("no top: asked %q, want %q", u.asked, want)
	}
	if rep.Top == nil || len(rep.Top) != 0 {
		t.Fatalf("no top: Top = %#v, want an empty list", rep.Top)
	}

	if _, err := ReadUsage(ctx, &usageLog{fail: "group"}, UsageFilter{}, dollar); ErrorCode(err) != EINTERNAL {
		t.Fatalf("failing reader: got %v, want its internal error", err)
	}
}

func TestUsageRowAdd(t *testing.T) {
	total := UsageRow{Key: "total", Sessions: 1, Messages: 2, InputTokens: 3, OutputTokens: 4, CacheReadTokens: 5, CacheWriteTokens: 6, ReasoningTokens: 7, EstimatedCostUSD: 0.5, ActualCostUSD: 0.25}
	total.Add(UsageRow{Key: "m", Sessions: 10, Messages: 20, InputTokens: 30, OutputTokens: 40, CacheReadTokens: 50, CacheWriteTokens: 60, ReasoningTokens: 70, EstimatedCostUSD: 1, ActualCostUSD: 2})
	want := UsageRow{Key: "total", Sessions: 11, Messages: 22, InputTokens: 33, OutputTokens: 44, CacheReadTokens: 55, CacheWriteTokens: 66, ReasoningTokens: 77, EstimatedCostUSD: 1.5, ActualCostUSD: 2.25}
	if total != want {
		t.Fatalf("sum %+v, want %+v", total, want)
	}
}
