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
		Long: `Sum the token counters and the costs of sessions, grouped by model and by
source, and list the sessions that cost most, by title.

TOKENS (IN+OUT) is input + output tokens, the figure every face shows; cache
reads and writes and reasoning tokens have columns of their own. COST is
counted by one rule everywhere: each session's actual cost where a provider
billed it, else its estimate (from the pricing table the agent used), summed;
EST. PART is how much of COST is estimated. --json gives every counter and
both stored cost sums as well.`,
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
					tab := usageTable(t.key, t.rows)
					if t.key == "TOP SESSIONS" {
						tab = topTable(t.rows)
					}
					if err := tab.Write(h.Out); err != nil {
						return err
					}
				}
				h.Printf("\nCOST: %s.\n", sessiondb.CostRule)
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
	t.Row(key, "SESSIONS", "MESSAGES", "TOKENS (IN+OUT)", "CACHE READ", "CACHE WRITE", "REASONING", "COST", "EST. PART")
	var sum sessiondb.UsageRow
	line := func(key string, r sessiondb.UsageRow) {
		t.Row(key, strconv.FormatInt(r.Sessions, 10), strconv.FormatInt(r.Messages, 10), fmtCount(r.Tokens()),
			fmtCount(r.CacheReadTokens), fmtCount(r.CacheWriteTokens), fmtCount(r.ReasoningTokens),
			fmtCost(r.CostUSD), fmtCost(r.CostEstimatedUSD))
	}
	for _, r := range rows {
		line(cli.OrDash(r.Key), r)
		sum.Add(r)
	}
	if len(rows) > 1 {
		line("total", sum)
	}
	return t
}

// topTable lists the costliest sessions by title (the id beside it): each
// row is one session, so it has no count of sessions.
func topTable(rows []sessiondb.UsageRow) *cli.Table {
	t := &cli.Table{}
	t.Row("TOP SESSIONS", "ID", "MESSAGES", "TOKENS (IN+OUT)", "CACHE READ", "COST")
	for _, r := range rows {
		cost := fmtCost(r.CostUSD)
		if r.CostEstimatedUSD != 0 {
			cost += " est."
		}
		t.Row(cli.OrDash(cli.Cut(r.Title, 40)), r.Key, strconv.FormatInt(r.Messages, 10), fmtCount(r.Tokens()),
			fmtCount(r.CacheReadTokens), cost)
	}
	return t
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
