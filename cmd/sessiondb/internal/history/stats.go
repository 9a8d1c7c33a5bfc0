package history

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

func (h *group) statsCmd() *cobra.Command {
	var f sessiondb.UsageFilter
	var since string
	c := &cobra.Command{
		Use:   "stats",
		Short: "Token use and cost by model and by source, and the costliest sessions",
		Long: `Sum the token counters (input, output, cache read and write, reasoning) and
the costs of sessions, grouped by model and by source, and list the sessions
that cost most. The estimated cost comes from the pricing table the agent
used; the actual cost is what a provider reported, where it did.`,
		Example: `  sessiondb stats
  sessiondb stats --since 30d
  sessiondb stats --source telegram --top 3
  sessiondb stats --since 2w --json`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if since != "" {
				days, err := parseAge("--since", since)
				if err != nil {
					return err
				}
				f.Since = sessiondb.EpochSeconds(h.Now()) - days*86400
			}
			if f.Top < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--top %d: want 0 or more", f.Top)
			}
			if f.Top == 0 {
				f.Top = -1 // the store reads 0 as its default of 10; 0 here means none
			}
			ctx := c.Context()
			return h.withStore(ctx, cli.ReadStore, func(st sessiondb.Store) error {
				r, err := st.Usage(ctx, f)
				if err != nil {
					return err
				}
				for _, rows := range []*[]sessiondb.UsageRow{&r.ByModel, &r.BySource, &r.Top} {
					*rows = sessiondb.NonNil(*rows)
				}
				if h.JSON {
					return h.PrintJSON(r)
				}
				if len(r.ByModel) == 0 && len(r.BySource) == 0 {
					// Headers over no rows would read as a broken report.
					h.Printf("%s\n", noSessionsIn(since, f.Source))
					return nil
				}
				// One table per grouping, a blank line apart; each is
				// aligned on its own.
				tables := []struct {
					key  string
					rows []sessiondb.UsageRow
				}{{"MODEL", r.ByModel}, {"SOURCE", r.BySource}, {"TOP SESSIONS", r.Top}}
				for i, t := range tables {
					if len(t.rows) == 0 && t.key == "TOP SESSIONS" {
						continue
					}
					if i > 0 {
						h.Printf("\n")
					}
					if err := usageTable(t.key, t.rows).Write(h.Out); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&f.Source, "source", "", "only sessions of this source")
	c.Flags().StringVar(&since, "since", "", "only sessions started within this age: 30d, 12h, 2w or a number of days")
	c.Flags().IntVar(&f.Top, "top", 10, "how many of the costliest sessions to list (0 = none)")
	return c
}

// usageTable lays out one group of usage rows with a total line.
func usageTable(key string, rows []sessiondb.UsageRow) *cli.Table {
	t := &cli.Table{}
	t.Row(key, "SESSIONS", "MESSAGES", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "REASONING", "EST. COST", "ACTUAL COST")
	var sum sessiondb.UsageRow
	for _, r := range rows {
		usageLine(t, cli.OrDash(r.Key), r)
		sum.Add(r)
	}
	if key != "TOP SESSIONS" && len(rows) > 1 {
		usageLine(t, "total", sum)
	}
	return t
}

func usageLine(t *cli.Table, key string, r sessiondb.UsageRow) {
	actual := "-" // no provider reported one
	if r.ActualCostUSD != 0 {
		actual = fmtCost(r.ActualCostUSD)
	}
	t.Row(key, strconv.FormatInt(r.Sessions, 10), strconv.FormatInt(r.Messages, 10),
		fmtCount(r.InputTokens), fmtCount(r.OutputTokens), fmtCount(r.CacheReadTokens),
		fmtCount(r.CacheWriteTokens), fmtCount(r.ReasoningTokens), fmtCost(r.EstimatedCostUSD), actual)
}

// noSessionsIn says that the range stats was asked for holds no session,
// naming the range.
func noSessionsIn(since, source string) string {
	var in []string
	if since != "" {
		in = append(in, "started in the last "+since)
	}
	if source != "" {
		in = append(in, "of source "+cli.PrintableLine(source))
	}
	if len(in) == 0 {
		return "no sessions in the store"
	}
	return "no sessions in this range: none " + strings.Join(in, " and ")
}
