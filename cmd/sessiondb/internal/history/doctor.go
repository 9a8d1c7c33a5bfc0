package history

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/version"
)

// doctorReport is what `doctor` finds, in its --json form.
type doctorReport struct {
	Path string `json:"path"`
	// Version is sessiondb's own (internal/version), as `sessiondb
	// version` prints it.
	Version string `json:"version"`
	// Opened is false when the file would not open as a store: only the
	// integrity check and the file's facts are known.
	Opened        bool   `json:"opened"`
	Driver        string `json:"driver"`
	GoVersion     string `json:"go_version"`
	SQLiteVersion string `json:"sqlite_version"`
	SchemaVersion int    `json:"schema_version"`
	FileBytes     int64  `json:"file_bytes"`
	WALBytes      int64  `json:"wal_bytes"`
	FileMode      string `json:"file_mode"`
	Sessions      int64  `json:"sessions"`
	// Integrity is integrity_check's own lines, at most maxIntegrityLines,
	// IntegrityMore how many more it gave; VersionSkew the complaints that
	// are differences between SQLite versions, not damage (explained).
	Integrity     []string `json:"integrity_check"`
	IntegrityMore int      `json:"integrity_check_more,omitempty"`
	VersionSkew   []string `json:"version_skew,omitempty"`
	FTS           string   `json:"fts_integrity_check"`
	// Additions are what sessiondb added to the file (README: "What
	// sessiondb adds to Hermes' file").
	Additions    []sessiondb.Addition `json:"additions"`
	Removed      []sessiondb.Addition `json:"removed_additions,omitempty"`
	RebuiltFTS   bool                 `json:"rebuilt_fts,omitempty"`
	OptimizedFTS bool                 `json:"optimized_fts,omitempty"`
	// Problems are what is wrong with the data: doctor fails on them.
	// Advice is what is sound but could be safer (a file other users may
	// read), each with its fix: doctor fails on it only with --strict.
	Problems []string `json:"problems"`
	Advice   []string `json:"advice"`
}

func (h *group) doctorCmd() *cobra.Command {
	var rebuild, optimize, strict, remove, yes bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the store: versions, size, permissions, integrity, search index",
		Long: `Report sessiondb's own version (as ` + "`sessiondb version`" + ` prints it), the
store's schema version, the SQLite library and driver in this build, the
file's size and permissions, and run SQLite's integrity_check and the
full-text index's own integrity check. Exits 1 when a check fails: the data
is damaged, or the search index does not match it.

Permissions are advice, not a failure: a store other users may read (mode
0644, as Hermes makes its files under the usual umask) is sound, and doctor
prints the chmod that closes it and exits 0. --strict fails on advice too.

integrity_check's own lines are shown (the first 20, and how many more),
also for a file too damaged to open as a store. A trigram index that this
SQLite calls malformed only because an SQLite older than 3.49.2 wrote it
over text with NUL bytes (a newer Hermes' multimodal content) is reported
as version skew, naming both versions, not as damage.

--rebuild-fts rebuilds the search index from the messages (the cure when the
index check fails), on a file of any schema version: a newer Hermes'
full-text tables as Hermes itself rebuilds them, their definitions and
triggers kept, the trigram table's text without NUL bytes, which every
SQLite reads alike. --optimize-fts merges the index's segments, which makes
search a little faster on a store that has taken many writes. A file without
a search index (Hermes without FTS5 makes none) is advice, not a failure:
search scans the messages.

It also lists what sessiondb has added to the file (tables, indexes,
triggers and state_meta keys of its own; README: "What sessiondb adds to
Hermes' file"), as --json's "additions". --remove-additions takes them out,
leaving the file's schema as Hermes made it (only sessiondb's keys leave
Hermes' state_meta); on a terminal it asks first, --yes skips that. Open
the file with --no-additions after, or the next write adds them again.`,
		Example: `  sessiondb doctor
  sessiondb --db ~/.hermes/state.db --read-only doctor
  sessiondb doctor --rebuild-fts
  sessiondb doctor --strict      # exit 1 on advice too (a file others may read)
  sessiondb --db ~/.hermes/state.db --no-additions doctor --remove-additions --yes`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := h.checkSynchronous(); err != nil {
				return err
			}
			access := cli.ReadStore
			if rebuild || optimize || remove {
				access = cli.WriteStore
			}
			ctx := c.Context()
			err := h.withStore(ctx, access, func(s sessiondb.Store) error {
				st, ok := s.(sessiondb.SQLiteMaintainer)
				if !ok {
					return sessiondb.Errorf(sessiondb.EINVALID, "doctor checks a SQLite store file, and this store is not one")
				}
				r := &doctorReport{Path: st.Path(), Opened: true, Version: version.String(), Driver: store.Driver, GoVersion: runtime.Version(), Problems: []string{}, Advice: []string{}}
				var err error
				if remove {
					held, err := st.Additions(ctx)
					if err != nil {
						return err
					}
					if len(held) > 0 {
						if err := h.Confirm(yes, nil, fmt.Sprintf("Remove sessiondb's %d addition(s) from %s? Listing by last activity and search of a large store get slower.", len(held), st.Path())); err != nil {
							return err
						}
					}
					if r.Removed, err = st.RemoveAdditions(ctx); err != nil {
						return err
					}
				}
				if rebuild {
					if err := h.Spin("rebuilding the search index", func() error { return st.RebuildFTS(ctx) }); err != nil {
						return err
					}
					r.RebuiltFTS = true
				}
				if optimize {
					if err := h.Spin("optimizing the search index", func() error { return st.OptimizeFTS(ctx) }); err != nil {
						return err
					}
					r.OptimizedFTS = true
				}
				if r.SQLiteVersion, err = st.SQLiteVersion(ctx); err != nil {
					return err
				}
				if r.SchemaVersion, err = st.SchemaVersion(ctx); err != nil {
					return err
				}
				if r.Sessions, err = s.SessionCount(ctx, ""); err != nil {
					return err
				}
				if r.Additions, err = st.Additions(ctx); err != nil {
					return err
				}
				if r.Additions == nil {
					r.Additions = []sessiondb.Addition{}
				}
				r.statFiles()
				lines, err := st.IntegrityCheck(ctx)
				if err != nil {
					return err
				}
				damage, skew := lines, []string(nil)
				if len(lines) != 1 || lines[0] != "ok" {
					if damage, skew, err = st.ExplainIntegrity(ctx, lines); err != nil {
						return err
					}
				}
				r.VersionSkew = skew
				if len(damage) == 0 {
					damage = []string{"ok"}
				}
				r.setIntegrity(damage)
				r.FTS = "ok"
				if h.ReadOnly {
					// FTS5 runs its check as an INSERT command, which a
					// read-only connection refuses even though it writes
					// nothing.
					r.FTS = "skipped (needs a writable open: drop --read-only)"
				} else if err := st.CanCheckFTS(); err != nil {
					r.FTS = "skipped: " + err.Error()
				} else if err := st.FTSIntegrityCheck(ctx); err != nil {
					if sessiondb.ErrorCode(err) == sessiondb.EBUSY {
						return err
					}
					r.FTS = err.Error()
					switch {
					case sessiondb.ErrorCode(err) == sessiondb.EINVALID:
						// No index is no damage: Hermes without FTS5 makes
						// none, and search then scans the messages.
						r.FTS = "missing (no messages_fts table)"
						r.Advice = append(r.Advice, err.Error())
					case st.CanRebuildFTS() != nil:
						// Advise --rebuild-fts only where it would run;
						// else the store says what works.
						r.Problems = append(r.Problems, st.CanRebuildFTS().Error())
					default:
						r.Problems = append(r.Problems, "the search index does not match the messages: run `sessiondb doctor --rebuild-fts`")
					}
				}
				return h.finishDoctor(r, strict)
			})
			if access == cli.ReadStore && store.IsDamaged(err) {
				// A file too damaged to open as a store still gets its
				// integrity_check, the only account of the damage.
				return h.doctorDamaged(ctx, err, strict)
			}
			return err
		},
	}
	c.Flags().BoolVar(&rebuild, "rebuild-fts", false, "rebuild the full-text search index from the messages")
	c.Flags().BoolVar(&optimize, "optimize-fts", false, "merge the search index's segments")
	c.Flags().BoolVar(&remove, "remove-additions", false, "remove sessiondb's own tables, indexes, triggers and state_meta keys from the file (open with --no-additions after)")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (--remove-additions)")
	c.Flags().BoolVar(&strict, "strict", false, "fail on advice too (a store file other users may read)")
	h.addSynchronousFlag(c)
	return c
}

// maxIntegrityLines is how many of integrity_check's lines doctor shows;
// a damaged file can give thousands.
const maxIntegrityLines = 20

// setIntegrity keeps the first maxIntegrityLines of lines and counts the
// rest; anything but a lone "ok" is a problem.
func (r *doctorReport) setIntegrity(lines []string) {
	r.Integrity = lines
	if len(lines) > maxIntegrityLines {
		r.Integrity, r.IntegrityMore = lines[:maxIntegrityLines], len(lines)-maxIntegrityLines
	}
	if len(lines) != 1 || lines[0] != "ok" {
		r.Problems = append(r.Problems, "integrity_check found damage: copy the file aside and restore from a backup or an export")
	}
}

// statFiles reads the sizes and mode of the store file and its WAL, and
// advises closing them where other users may reach them: both hold the
// conversations (SQLite gives the WAL the file's mode).
func (r *doctorReport) statFiles() {
	var open []string
	var mode os.FileMode
	for i, p := range []string{r.Path, r.Path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if i == 0 {
			r.FileBytes, r.FileMode = fi.Size(), fmt.Sprintf("%04o", fi.Mode().Perm())
		} else {
			r.WALBytes = fi.Size()
		}
		if fi.Mode().Perm()&0o077 != 0 {
			open, mode = append(open, shellQuote(p)), mode|fi.Mode().Perm()
		}
	}
	if len(open) > 0 {
		r.Advice = append(r.Advice, fmt.Sprintf("other users may read the conversations (mode %04o); close the store with: chmod 600 %s",
			mode, strings.Join(open, " ")))
	}
}

// shellQuote returns s as one word for a POSIX shell: as it is when it
// holds only characters no shell treats specially, else single-quoted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=.,/:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// finishDoctor prints r and fails when it holds a problem, or, when
// strict, advice.
func (h *group) finishDoctor(r *doctorReport, strict bool) error {
	if h.JSON {
		if err := h.PrintJSON(r); err != nil {
			return err
		}
	} else {
		h.printDoctor(r)
	}
	switch {
	case len(r.Problems) > 0:
		return sessiondb.Errorf(sessiondb.EINTERNAL, "%d problem(s) found in %s", len(r.Problems), r.Path)
	case strict && len(r.Advice) > 0:
		return sessiondb.Errorf(sessiondb.EINTERNAL, "%d piece(s) of advice for %s (--strict fails on advice)", len(r.Advice), r.Path)
	}
	return nil
}

// doctorDamaged reports a file that would not open as a store (openErr):
// what the file is and integrity_check's lines on it, read without opening
// it as a store.
func (h *group) doctorDamaged(ctx context.Context, openErr error, strict bool) error {
	path, err := h.HistoryPath()
	if err != nil {
		return err
	}
	lines, err := store.CheckFile(ctx, path)
	if err != nil {
		return openErr
	}
	r := &doctorReport{Path: path, Version: version.String(), Driver: store.Driver, GoVersion: runtime.Version(), FTS: "not checked (the store does not open)", Problems: []string{}, Advice: []string{}}
	r.statFiles()
	r.SQLiteVersion = store.SQLiteVersion(ctx)
	if len(lines) == 1 && lines[0] == "ok" {
		// Sound pages, but not a store we can open: say why.
		r.Problems = append(r.Problems, openErr.Error())
		r.Integrity = lines
	} else {
		r.setIntegrity(lines)
	}
	return h.finishDoctor(r, strict)
}

func (h *group) printDoctor(r *doctorReport) {
	h.Printf("sessiondb       %s\n", r.Version)
	h.Printf("store           %s\n", cli.PrintableLine(r.Path))
	h.Printf("file            %s bytes (+ %s WAL), mode %s\n", fmtCount(r.FileBytes), fmtCount(r.WALBytes), cli.OrDash(r.FileMode))
	if r.Opened {
		h.Printf("schema version  %d\n", r.SchemaVersion)
		h.Printf("sessions        %d\n", r.Sessions)
	} else {
		h.Printf("schema version  - (the file does not open as a store)\n")
	}
	h.Printf("sqlite          %s (driver %s, %s)\n", r.SQLiteVersion, r.Driver, r.GoVersion)
	if len(r.Integrity) == 1 {
		h.Printf("integrity       %s\n", cli.PrintableLine(r.Integrity[0]))
	} else {
		h.Printf("integrity       %d lines from integrity_check:\n", len(r.Integrity)+r.IntegrityMore)
		for _, l := range r.Integrity {
			h.Printf("                %s\n", cli.PrintableLine(l))
		}
		if r.IntegrityMore > 0 {
			h.Printf("                ... and %d more (`sqlite3 FILE 'PRAGMA integrity_check'` lists them all)\n", r.IntegrityMore)
		}
	}
	for _, sk := range r.VersionSkew {
		h.Printf("version skew    %s\n", cli.PrintableLine(sk))
	}
	h.Printf("search index    %s\n", cli.PrintableLine(r.FTS))
	if len(r.Removed) > 0 {
		h.Printf("removed         %d addition(s) of sessiondb's\n", len(r.Removed))
	}
	if len(r.Additions) == 0 {
		h.Printf("additions       none (every table, index and trigger is Hermes')\n")
	} else {
		h.Printf("additions       %d by sessiondb (the rest is Hermes'):\n", len(r.Additions))
		for _, a := range r.Additions {
			h.Printf("                %s %s: %s\n", a.Kind, a.Name, a.For)
		}
	}
	if r.RebuiltFTS {
		h.Printf("                rebuilt\n")
	}
	if r.OptimizedFTS {
		h.Printf("                optimized\n")
	}
	for _, p := range r.Problems {
		h.Printf("problem: %s\n", cli.PrintableLine(p))
	}
	for _, a := range r.Advice {
		h.Printf("advice: %s\n", cli.PrintableLine(a))
	}
}
