package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/internal/safefile"
)

// printResult hands a bench result to whoever asked: the whole JSON on
// stdout for a script (--json, or stdout not a terminal, as `bench >
// result.json` and .ci/smoke run it); on a person's terminal a readable
// summary there, the JSON (some 3,000 lines, one per query of every
// phase) written to output, by default a file in the current folder, whose
// path the summary ends with. --output writes the file in every case.
func printResult(f *cli.Factory, res any, output string) error {
	toStdout := f.JSON || !cli.IsTerminal(f.Out)
	if output == "" && !toStdout {
		output = fmt.Sprintf("sessiondb-bench-%s.json", f.Now().UTC().Format("20060102-150405"))
	}
	if output != "" {
		if err := writeJSONFile(output, res); err != nil {
			return err
		}
	}
	if toStdout {
		return f.PrintJSON(res)
	}
	writeSummary(f.Out, res)
	if abs, err := filepath.Abs(output); err == nil {
		output = abs
	}
	fmt.Fprintf(f.Out, "\nthe full result (JSON, every query's figures): %s\n", cli.PrintableLine(output))
	return nil
}

// writeJSONFile writes v as indented JSON to path, 0600, replaced whole
// once complete; a symbolic link there is refused (safefile).
func writeJSONFile(path string, v any) error {
	out, err := safefile.Create("--output", path, 0o600)
	if err != nil {
		return err
	}
	defer out.Abort()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write %s", path)
	}
	return out.Commit()
}

// writeSummary writes the headline figures of res (one result, or one per
// backend with --db) as a short table.
func writeSummary(w io.Writer, res any) {
	switch r := res.(type) {
	case *benchResult:
		summarizeOne(w, r)
	case map[string]*benchResult:
		names := make([]string, 0, len(r))
		for n := range r {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			if i > 0 {
				fmt.Fprintln(w)
			}
			summarizeOne(w, r[n])
		}
	}
}

func summarizeOne(w io.Writer, r *benchResult) {
	fmt.Fprintf(w, "sessiondb bench on %s (driver %s, SQLite %s, %s), synchronous %s\n\n",
		r.Backend, r.Driver, cli.OrDash(r.SQLiteVersion), r.GoVersion, r.Synchronous)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{name}, args...)...)
	}
	row("append", "%d messages one call at a time: %.0f msgs/s", r.Append.Messages, r.Append.MsgsPerS)
	row("import", "%.0f msgs/s", r.Import.MsgsPerS)
	row("search", "p50 %.2f ms, p95 %.2f ms, max %.2f ms over %d queries (%d found nothing)",
		r.Search.P50MS, r.Search.P95MS, r.Search.MaxMS, len(r.Search.PerQuery), r.Search.ZeroHitQueries)
	if r.Search.FloorP50MS > 0 {
		row("search floor", "bare FTS5 ranking p50 %.2f ms: the search's p50 is x%.2f of it", r.Search.FloorP50MS, r.Search.RatioVsFloor)
	}
	row("get_messages", "%d rows: p50 %.2f ms", r.GetMessages.Rows, r.GetMessages.P50MS)
	c := r.Concurrent
	row("concurrent", "%d processes: %.0f msgs/s (x%.2f of one alone), %d errors, %d of %d rows stored",
		c.Procs, c.AggregateMsgsPerS, c.RatioVsSingleProc, c.ErrorsTotal, c.RowsStored, c.RowsExpected)
	if g := r.GroupCommit; g.Messages > 0 {
		row("group commit", "%d goroutines: %.0f msgs/s (x%.2f of serial)", g.Goroutines, g.MsgsPerS, g.RatioVsSerial)
	}
	if r.Raw != nil {
		row("raw append", "%.0f msgs/s in a bare database/sql loop", r.Raw.Append.MsgsPerS)
	}
	for _, s := range r.Scaling {
		row(fmt.Sprintf("scaling %d", s.Procs), "%.0f msgs/s, %d errors", s.AggregateMsgsPerS, s.ErrorsTotal)
	}
	if s := r.Serve; s != nil {
		row("serve search", "p50 %.2f ms, p95 %.2f ms (x%.2f of the library's p95)", s.Search.P50MS, s.Search.P95MS, s.SearchP95Ratio)
	}
	if r.DBBytes > 0 {
		row("store", "%.1f MB", float64(r.DBBytes)/1e6)
	}
	tw.Flush()
}
