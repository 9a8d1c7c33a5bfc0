package history

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/internal/fts"
)

func (h *group) searchCmd() *cobra.Command {
	var f sessiondb.SearchFilter
	var source string
	c := &cobra.Command{
		Use:   "search <query>",
		Short: "Full-text search over every message",
		Long: `Search the text of every message, best matches first. Each hit shows its
session, source, model, role and time, the matching words highlighted (bold
on a terminal, [in brackets] otherwise), and the messages just before and
after it in the same session.

The query takes FTS5 syntax: words (all must match), "exact phrases",
prefix*, OR, NOT; content:word is a column filter on the one column, the
same as word. Punctuation that FTS5 would reject is quoted for you, and
text in Chinese, Japanese or Korean is matched as a substring (highlighted
the same way, with ... where the snippet cuts the text).

The query is cleaned as Hermes cleans it, byte for byte: an AND, OR or NOT
at either end is dropped ("NOT docker" searches docker: name what to find
first, "deploy NOT docker"), + ( ) { } ^ become spaces, a leading * goes,
and words joined by . or - are searched as a phrase. Whatever was changed
is said on stderr, and with --json in "query" ({"text", "ran", "changes"})
beside "hits". A query left with no words, or a --role other than user,
assistant, tool or system, is refused; an --offset past the last match says
how many matches there are ("matches" with --json). To search for a word
that starts with '-', put -- before it: sessiondb search -- -race.

A store of up to 200,000 messages is ranked whole, as Hermes ranks it. On a
larger one the matches among the newest 100,000 messages come first, ranked,
then the older ones, newest first: a second index of the newest messages
keeps that fast. search keeps that index up to date in the store file (the
first search of a large store builds it, a few seconds); with --read-only it
writes nothing, and while the index is behind it ranks as it would without
one, more slowly.`,
		Example: `  sessiondb search docker
  sessiondb search '"readiness probe"' --source cli
  sessiondb search 'deploy* OR rollout' --role assistant --limit 5
  sessiondb search 大别山
  sessiondb search backup --exclude-source cron --json`,
		Args:        cli.MinimumArgs(1, "a query (several words are searched together)"),
		Annotations: map[string]string{cli.DashHint: "to search for a term starting with '-'"},
		RunE: func(c *cobra.Command, args []string) error {
			if err := cli.CheckPaging(f.Limit, f.Offset); err != nil {
				return err
			}
			if err := sessiondb.CheckRoles("--role", f.Roles); err != nil {
				return err
			}
			query := strings.Join(args, " ")
			if strings.TrimSpace(query) == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "the query is empty: give words to look for")
			}
			q := explainQuery(query)
			if q.Ran == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "the query %q leaves nothing to search for: %s", query, q.why())
			}
			if source != "" {
				f.Sources = []string{source}
			}
			ctx := c.Context()
			return h.withStore(ctx, cli.ReadStore, func(st sessiondb.Store) error {
				if err := h.catchUpSearchIndex(ctx, st); err != nil {
					return err
				}
				hits, err := st.SearchMessages(ctx, query, f)
				if err != nil {
					return err
				}
				// A page past the last match is not "no match": say how
				// many there are, which a search from the start counts
				// (fewer than the offset, or this page would hold some).
				matches := -1
				if len(hits) == 0 && f.Offset > 0 {
					all := f
					all.Offset, all.Limit = 0, f.Offset
					first, err := st.SearchMessages(ctx, query, all)
					if err != nil {
						return err
					}
					matches = len(first)
				}
				if h.JSON {
					out := searchOutput{Query: q, Hits: sessiondb.NonNil(hits)}
					if matches >= 0 {
						out.Matches = &matches
					}
					return h.PrintJSON(out)
				}
				if len(q.Changes) > 0 || q.Ran != strings.TrimSpace(query) {
					fmt.Fprintf(h.Err, "search: %s ran as %s%s\n", cli.PrintableLine(strconv.Quote(query)), cli.PrintableLine(strconv.Quote(q.Ran)), q.list())
				}
				switch {
				case matches > 0:
					h.Printf("no more matches: %d match(es) in all, offset %d\n", matches, f.Offset)
					return nil
				case len(hits) == 0:
					h.Printf("no messages match %s\n", cli.PrintableLine(strconv.Quote(query)))
					return nil
				}
				return h.printHits(ctx, st, hits)
			})
		},
	}
	c.Flags().StringVar(&source, "source", "", "only messages of sessions from this source")
	c.Flags().StringArrayVar(&f.ExcludeSources, "exclude-source", nil, "leave out sessions of this source (repeatable)")
	c.Flags().StringArrayVar(&f.Roles, "role", nil, "only messages with this role: "+strings.Join(sessiondb.MessageRoles(), ", ")+" (repeatable)")
	c.Flags().IntVar(&f.Limit, "limit", 20, "how many hits to show")
	c.Flags().IntVar(&f.Offset, "offset", 0, "skip this many hits first (for paging)")
	return c
}

// spinRecentAt is how many messages the recent search index may owe before
// search shows its catching up: a few seconds' work and more (the first
// search of a large store builds it).
const spinRecentAt = 20_000

// catchUpSearchIndex brings a SQLite store's recent search index up to
// date under a spinner when it owes much, which the search would
// otherwise do silently.
func (h *group) catchUpSearchIndex(ctx context.Context, st sessiondb.Store) error {
	m, ok := st.(sessiondb.SQLiteMaintainer)
	if !ok {
		return nil
	}
	n, err := m.RecentIndexBehind(ctx)
	if err != nil || n < spinRecentAt {
		return nil // the search catches up itself, or ranks without it
	}
	err = h.Spin(fmt.Sprintf("indexing %d recent messages for search", n), func() error { return m.SyncRecentIndex(ctx) })
	if ctx.Err() != nil {
		return err
	}
	return nil
}

// printHits writes search hits as short transcripts under a header naming
// the session by id and title. Hits carry no title, so each session is
// looked up once.
func (h *group) printHits(ctx context.Context, st sessiondb.SessionService, hits []sessiondb.SearchHit) error {
	tty := h.Styled()
	titles := map[string]string{}
	for i := range hits {
		hit := &hits[i]
		title, seen := titles[hit.SessionID]
		if !seen {
			t, _, err := st.GetSessionTitle(ctx, hit.SessionID)
			if err != nil {
				return err
			}
			title, titles[hit.SessionID] = t, t
		}
		if i > 0 {
			h.Printf("\n")
		}
		// Stored values are escaped (cli.PrintableLine) before styles and
		// highlights are added, which are the only escapes printed.
		line := cli.PrintableLine
		head := hit.SessionID
		if title != "" {
			head += " " + title
		}
		h.Printf("%s  %s · %s · %s · id %d %s\n", cli.Style(tty, cli.Bold, line(head)), line(hit.Source),
			line(cli.OrDash(deref(hit.Model))), fmtTime(hit.Timestamp), hit.ID, line(hit.Role))
		at := hitIndex(hit)
		snippet := highlight(line(cli.Cut(hit.Snippet, 240)), tty)
		for j, row := range hit.Context {
			if j == at {
				h.Printf("  > %s: %s\n", line(row.Role), snippet)
				continue
			}
			text := cli.Cut(sessiondb.ContentText(row.Content), 160)
			if text == "" {
				text = "(no text)"
			}
			h.Printf("%s\n", cli.Style(tty, cli.Dim, "    "+line(row.Role+": "+text)))
		}
		if at < 0 {
			h.Printf("  > %s: %s\n", line(hit.Role), snippet)
		}
	}
	return nil
}

// hitIndex finds which context row is the hit itself, so the transcript
// shows the highlighted snippet in its place. Context is previous, hit, next
// with the ends missing at a session's boundary; with two rows the snippet's
// text decides. -1 means the rows cannot tell (the snippet is printed
// after them).
func hitIndex(hit *sessiondb.SearchHit) int {
	switch len(hit.Context) {
	case 1:
		return 0
	case 3:
		return 1
	case 2:
		plain := strings.NewReplacer(">>>", "", "<<<", "").Replace(hit.Snippet)
		for _, part := range strings.Split(plain, "...") {
			part = strings.TrimSpace(part)
			if len(part) < 4 {
				continue
			}
			in0 := strings.Contains(hit.Context[0].Content, part) && hit.Context[0].Role == hit.Role
			in1 := strings.Contains(hit.Context[1].Content, part) && hit.Context[1].Role == hit.Role
			switch {
			case in0 && !in1:
				return 0
			case in1 && !in0:
				return 1
			}
		}
	}
	return -1
}

// searchOutput is search's --json: what ran and the hits. Matches is
// given only when --offset is past the last match: how many there are.
type searchOutput struct {
	Query   searchQuery           `json:"query"`
	Hits    []sessiondb.SearchHit `json:"hits"`
	Matches *int                  `json:"matches,omitempty"`
}

// searchQuery is what search did to the query typed: the query that ran
// is Hermes v6's sanitizer's, byte for byte (fts.Sanitize), and each change
// it made is named with its reason.
type searchQuery struct {
	Text    string        `json:"text"`
	Ran     string        `json:"ran"`
	Changes []queryChange `json:"changes"`
}

// queryChange is one change of the sanitizer: its kind, the text it
// concerned, and why.
type queryChange struct {
	Change string `json:"change"`
	Text   string `json:"text"`
	Why    string `json:"why"`
}

// explainQuery sanitizes query as the store will and says what changed.
func explainQuery(query string) searchQuery {
	ran, notes := fts.SanitizeNotes(query)
	q := searchQuery{Text: query, Ran: ran, Changes: []queryChange{}}
	for _, n := range notes {
		q.Changes = append(q.Changes, describeChange(n))
	}
	return q
}

// describeChange words one sanitizer change for people and scripts.
func describeChange(n fts.Note) queryChange {
	switch n.Change {
	case fts.DroppedLeadingOperator:
		return queryChange{"dropped_leading_operator", n.Text, fmt.Sprintf("the leading %q was dropped: an operator needs a word before it, and a search cannot ask for everything but a word; to leave a word out, name what to find first: deploy NOT docker", n.Text)}
	case fts.DroppedTrailingOperator:
		return queryChange{"dropped_trailing_operator", n.Text, fmt.Sprintf("the trailing %q was dropped: an operator needs a word after it", n.Text)}
	case fts.RemovedSyntax:
		return queryChange{"removed_syntax", n.Text, fmt.Sprintf("%s became spaces: the full-text index reads them as syntax, and it holds words, not punctuation", strings.Join(strings.Split(n.Text, ""), " "))}
	case fts.DroppedLeadingStar:
		return queryChange{"dropped_leading_star", n.Text, "a * at the start of a word was dropped: words match by their beginning (deploy*), never by their end"}
	case fts.QuotedCompound:
		return queryChange{"quoted_compound", n.Text, fmt.Sprintf("%s is searched as a phrase: the index splits words at . and -", strconv.Quote(n.Text))}
	}
	return queryChange{"other", n.Text, "changed"}
}

// why is the reasons of q's changes, for an error message.
func (q searchQuery) why() string {
	var w []string
	for _, c := range q.Changes {
		w = append(w, c.Why)
	}
	if len(w) == 0 {
		return "it holds no word"
	}
	return strings.Join(w, "; ")
}

// list is q's changes as indented lines after a colon, or "".
func (q searchQuery) list() string {
	if len(q.Changes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(":")
	for _, c := range q.Changes {
		b.WriteString("\n  " + cli.PrintableLine(c.Why))
	}
	return b.String()
}
