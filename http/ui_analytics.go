package http

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
)

// analyticsView is the analytics page: the usage report of the sessions
// the filter selects, drawn as charts (SVG built here, no script) and
// tables.
type analyticsView struct {
	Source  string
	Days    int
	Ranges  []rangeLink
	Sources []string
	// Totals sums every session the filter selects.
	Totals            sessiondb.UsageRow
	TokensChart       *barChart
	CostChart         *barChart
	ByModel, BySource []groupRow
	Top               []topRow
	// Daily is one row per day with usage, newest first (Hermes'
	// dashboard's daily breakdown).
	Daily []dayRow
	// CacheHit is the share of prompt tokens read from the cache:
	// cache read / (input + cache read); Hermes counts input apart from
	// cache reads. HasCacheHit is false when no prompt token was counted.
	CacheHit    float64
	HasCacheHit bool
	CostRule    string
}

// dayRow is one day of the daily table.
type dayRow struct {
	sessiondb.UsageRow
	CacheHit    float64
	HasCacheHit bool
}

// cacheHitShare is cache read / (input + cache read) in percent, and
// whether any prompt token was counted.
func cacheHitShare(x sessiondb.UsageRow) (float64, bool) {
	prompt := x.InputTokens + x.CacheReadTokens
	if prompt == 0 {
		return 0, false
	}
	return round1(100 * float64(x.CacheReadTokens) / float64(prompt)), true
}

// rangeLink is one of the time ranges the page offers.
type rangeLink struct {
	Label, URL string
	Current    bool
}

// groupRow is a model's or a source's usage, with its share of the
// largest group as a bar.
type groupRow struct {
	sessiondb.UsageRow
	Tokens            int64
	TokenPct, CostPct float64
	Cost              float64
	EstimatedOnly     bool
	Label             string
}

// topRow is one of the costliest sessions.
type topRow struct {
	sessiondb.UsageRow
	Title  string
	Tokens int64
	Cost   float64
}

// barChart is a bar chart as the template draws it in SVG: every
// coordinate is computed here, in the chart's own units (its viewBox).
type barChart struct {
	Title         string
	Width, Height float64
	Bars          []chartRect
	Grid          []gridLine
	XLabels       []chartLabel
	Legend        []legendItem
	Empty         bool
}

type chartRect struct {
	X, Y, W, H float64
	Class      string
	// Tip is the bar's tooltip (an SVG <title>): the day and its figures.
	Tip string
}

type gridLine struct {
	Y     float64
	Label string
}

type chartLabel struct {
	X     float64
	Label string
}

type legendItem struct {
	Class, Label string
}

// Chart geometry, in viewBox units: the plot sits right of the y labels
// and above the x labels.
const (
	chartW, chartH         = 720.0, 220.0
	chartLeft, chartBottom = 60.0, 22.0
	chartTop               = 8.0
)

// dayRanges are the time ranges the analytics page offers, in days (0:
// all time).
var dayRanges = []int{7, 30, 90, 0}

// uiAnalytics: GET /analytics?source=&days= shows tokens and cost per
// day, by model and by source, and the costliest sessions.
func (s *Server) uiAnalytics(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	v := analyticsView{Source: p.str("source"), Days: p.int("days", 30, 0, 36500)}
	if p.err != nil {
		return p.err
	}
	ctx := r.Context()
	now := s.now()
	f := sessiondb.UsageFilter{Source: v.Source, Top: 10}
	if v.Days > 0 {
		f.Since = sessiondb.EpochSeconds(now.Add(-time.Duration(v.Days) * 24 * time.Hour))
	}
	rep, err := s.cfg.History.Usage(ctx, f)
	if err != nil {
		return err
	}
	base := r.URL.Path + "?" + r.URL.RawQuery
	for _, d := range dayRanges {
		l := rangeLink{Label: "all time", URL: withQuery(base, "days", "0"), Current: d == v.Days}
		if d > 0 {
			l.Label, l.URL = strconv.Itoa(d)+" days", withQuery(base, "days", strconv.Itoa(d))
		}
		v.Ranges = append(v.Ranges, l)
	}
	v.Sources, _ = s.facets(ctx)
	for _, x := range rep.BySource {
		v.Totals.Add(x)
	}
	var from, to time.Time
	if v.Days > 0 {
		from, to = now.UTC().AddDate(0, 0, -v.Days+1), now.UTC()
	}
	days := fillDays(rep.ByDay, from, to)
	v.TokensChart = dayChart("Tokens per day", days, []series{
		{"input", "s0", func(x sessiondb.UsageRow) float64 { return float64(x.InputTokens) }},
		{"output", "s1", func(x sessiondb.UsageRow) float64 { return float64(x.OutputTokens) }},
		{"cache read", "s2", func(x sessiondb.UsageRow) float64 { return float64(x.CacheReadTokens) }},
		{"cache write", "s3", func(x sessiondb.UsageRow) float64 { return float64(x.CacheWriteTokens) }},
	}, compactNumber)
	v.CostChart = dayChart("Cost per day (USD, actual where billed, else estimated)", days, []series{
		{"cost", "s4", rowCost},
	}, dollars)
	v.CostRule = sessiondb.CostRule
	v.CacheHit, v.HasCacheHit = cacheHitShare(v.Totals)
	for i := len(rep.ByDay) - 1; i >= 0; i-- {
		d := dayRow{UsageRow: rep.ByDay[i]}
		d.CacheHit, d.HasCacheHit = cacheHitShare(d.UsageRow)
		v.Daily = append(v.Daily, d)
	}
	v.ByModel = groupRows(rep.ByModel, "(no model)")
	v.BySource = groupRows(rep.BySource, "(none)")
	for _, x := range rep.Top {
		t := topRow{UsageRow: x, Tokens: rowTokens(x), Cost: rowCost(x)}
		if ss, err := s.cfg.History.GetSession(ctx, x.Key); err == nil {
			t.Title = deref(ss.Title)
		}
		v.Top = append(v.Top, t)
	}
	s.page(w, r, "analytics", v)
	return nil
}

// rowTokens is a group's tokens, input + output (sessiondb.Tokens).
func rowTokens(x sessiondb.UsageRow) int64 { return x.Tokens() }

// rowCost is a group's cost by sessiondb.CostRule, summed per session: a
// group mixing billed and estimated sessions counts both.
func rowCost(x sessiondb.UsageRow) float64 { return x.CostUSD }

func groupRows(rows []sessiondb.UsageRow, blank string) []groupRow {
	var maxTok int64
	var maxCost float64
	for _, x := range rows {
		maxTok = max(maxTok, rowTokens(x))
		maxCost = max(maxCost, rowCost(x))
	}
	out := make([]groupRow, 0, len(rows))
	for _, x := range rows {
		g := groupRow{UsageRow: x, Tokens: rowTokens(x), Cost: rowCost(x), Label: x.Key,
			EstimatedOnly: x.CostEstimatedUSD > 0 && x.CostEstimatedUSD == x.CostUSD}
		if g.Label == "" {
			g.Label = blank
		}
		if maxTok > 0 {
			g.TokenPct = round1(100 * float64(g.Tokens) / float64(maxTok))
		}
		if maxCost > 0 {
			g.CostPct = round1(100 * g.Cost / maxCost)
		}
		out = append(out, g)
	}
	return out
}

// fillDays returns one row per UTC day from the first to the last day
// (or from..to when given), with the days the report lacks as zeros, so
// a chart's x axis is time. More than a year and a half of days keeps
// only the days the report has.
func fillDays(rows []sessiondb.UsageRow, from, to time.Time) []sessiondb.UsageRow {
	const layout = "2006-01-02"
	have := map[string]sessiondb.UsageRow{}
	for _, x := range rows {
		have[x.Key] = x
	}
	if from.IsZero() {
		if len(rows) == 0 {
			return nil
		}
		var err1, err2 error
		from, err1 = time.Parse(layout, rows[0].Key)
		to, err2 = time.Parse(layout, rows[len(rows)-1].Key)
		if err1 != nil || err2 != nil {
			return rows
		}
	}
	from = time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.UTC)
	if to.Sub(from) > 550*24*time.Hour {
		return rows
	}
	var out []sessiondb.UsageRow
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		k := d.Format(layout)
		x, ok := have[k]
		if !ok {
			x = sessiondb.UsageRow{Key: k}
		}
		out = append(out, x)
	}
	return out
}

// series is one stacked part of a day chart.
type series struct {
	label, class string
	value        func(sessiondb.UsageRow) float64
}

// dayChart draws one bar per day, the series stacked, on a y axis from 0
// to a round number above the tallest day.
func dayChart(title string, days []sessiondb.UsageRow, ss []series, format func(float64) string) *barChart {
	c := &barChart{Title: title, Width: chartW, Height: chartH}
	for _, x := range ss {
		c.Legend = append(c.Legend, legendItem{Class: x.class, Label: x.label})
	}
	var top float64
	for _, d := range days {
		var sum float64
		for _, x := range ss {
			sum += x.value(d)
		}
		top = max(top, sum)
	}
	if len(days) == 0 || top == 0 {
		c.Empty = true
		return c
	}
	top = niceCeil(top)
	plotW, plotH := chartW-chartLeft-4, chartH-chartTop-chartBottom
	for i := 0; i <= 4; i++ {
		y := chartTop + plotH*(1-float64(i)/4)
		c.Grid = append(c.Grid, gridLine{Y: round1(y), Label: format(top * float64(i) / 4)})
	}
	slot := plotW / float64(len(days))
	barW := math.Max(slot*0.8, 1)
	every := int(math.Ceil(float64(len(days)) / 6)) // at most about six dates under the axis
	for i, d := range days {
		x := chartLeft + slot*float64(i) + (slot-barW)/2
		y := chartTop + plotH
		tip := d.Key
		for _, s := range ss {
			v := s.value(d)
			tip += "\n" + s.label + ": " + format(v)
			if v <= 0 {
				continue
			}
			h := plotH * v / top
			y -= h
			c.Bars = append(c.Bars, chartRect{X: round1(x), Y: round1(y), W: round1(barW), H: round1(math.Max(h, 0.5)), Class: s.class})
		}
		// One invisible full-height rect per day carries the tooltip, so
		// hovering anywhere over the day shows its figures.
		c.Bars = append(c.Bars, chartRect{X: round1(chartLeft + slot*float64(i)), Y: chartTop, W: round1(slot), H: round1(plotH), Class: "hit", Tip: tip})
		if i%every == 0 {
			c.XLabels = append(c.XLabels, chartLabel{X: round1(x + barW/2), Label: d.Key[5:]})
		}
	}
	return c
}

// dollars writes an amount short: $0, $0.0042, $12.5, $1.2k.
func dollars(f float64) string {
	prec := 2
	switch {
	case f >= 1000:
		return "$" + compactNumber(f)
	case f < 1:
		prec = 4
	}
	t := strconv.FormatFloat(f, 'f', prec, 64)
	t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
	return "$" + t
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*1.0000001 {
			return m * p
		}
	}
	return 10 * p
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// compactNumber writes large counts short: 950, 12k, 3.4M, 1.2B.
func compactNumber(f float64) string {
	switch a := math.Abs(f); {
	case a >= 1e9:
		return trimZero(f/1e9) + "B"
	case a >= 1e6:
		return trimZero(f/1e6) + "M"
	case a >= 1e3:
		return trimZero(f/1e3) + "k"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func trimZero(f float64) string {
	if f >= 100 || f == math.Trunc(f) {
		return strconv.FormatFloat(math.Round(f), 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}
