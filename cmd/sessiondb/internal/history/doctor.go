package history

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
)

// doctorReport is what `doctor` finds, in its --json form.
type doctorReport struct {
	Path          string   `json:"path"`
	Driver        string   `json:"driver"`
	GoVersion     string   `json:"go_version"`
	SQLiteVersion string   `json:"sqlite_version"`
	SchemaVersion int      `json:"schema_version"`
	FileBytes     int64    `json:"file_bytes"`
	WALBytes      int64    `json:"wal_bytes"`
	FileMode      string   `json:"file_mode"`
	Sessions      int64    `json:"sessions"`
	Integrity     []string `json:"integrity_check"`
	FTS           string   `json:"fts_integrity_check"`
	RebuiltFTS    bool     `json:"rebuilt_fts,omitempty"`
	OptimizedFTS  bool     `json:"optimized_fts,omitempty"`
	Problems      []string `json:"problems"`
}

func (h *group) doctorCmd() *cobra.Command {
	var rebuild, optimize bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the store: versions, size, permissions, integrity, search index",
		Long: `Report the store's schema version, the SQLite library and driver in this
build, the file's size and permissions, and run SQLite's integrity_check and
the full-text index's own integrity check. Exits 1 when a check fails.

--rebuild-fts rebuilds the search index from the messages (the cure when the
index check fails); --optimize-fts merges the index's segments, which makes
search a little faster on a store that has taken many writes.`,
		Example: `  sessiondb doctor
  sessiondb --db ~/.hermes/state.db --read-only doctor
  sessiondb doctor --rebuild-fts`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := h.checkSynchronous(); err != nil {
				return err
			}
			access := cli.ReadStore
			if rebuild || optimize {
				access = cli.WriteStore
			}
			ctx := c.Context()
			return h.withStore(ctx, access, func(s sessiondb.Store) error {
				st, ok := s.(sessiondb.SQLiteMaintainer)
				if !ok {
					return sessiondb.Errorf(sessiondb.EINVALID, "doctor checks a SQLite store file, and this store is not one")
				}
				r := &doctorReport{Path: st.Path(), Driver: store.Driver, GoVersion: runtime.Version(), Problems: []string{}}
				var err error
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
				if fi, err := os.Stat(st.Path()); err == nil {
					r.FileBytes, r.FileMode = fi.Size(), fmt.Sprintf("%04o", fi.Mode().Perm())
					if fi.Mode().Perm()&0o077 != 0 {
						r.Problems = append(r.Problems, fmt.Sprintf("the file is readable by others (mode %s): chmod 600 %s", r.FileMode, st.Path()))
					}
				}
				if fi, err := os.Stat(st.Path() + "-wal"); err == nil {
					r.WALBytes = fi.Size()
				}
				if r.Integrity, err = st.IntegrityCheck(ctx); err != nil {
					return err
				}
				if len(r.Integrity) != 1 || r.Integrity[0] != "ok" {
					r.Problems = append(r.Problems, "integrity_check found damage: copy the file aside and restore from a backup or an export")
				}
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
					if sessiondb.ErrorCode(err) == sessiondb.EINVALID {
						r.FTS = "missing (no messages_fts table)"
					}
					// Advise --rebuild-fts only where it would run; else the
					// store says what works (a newer Hermes owns its index).
					if cerr := st.CanRebuildFTS(); cerr != nil {
						r.Problems = append(r.Problems, cerr.Error())
					} else {
						r.Problems = append(r.Problems, "the search index does not match the messages: run `sessiondb doctor --rebuild-fts`")
					}
				}
				if h.JSON {
					if err := h.PrintJSON(r); err != nil {
						return err
					}
				} else {
					h.printDoctor(r)
				}
				if len(r.Problems) > 0 {
					return sessiondb.Errorf(sessiondb.EINTERNAL, "%d problem(s) found in %s", len(r.Problems), st.Path())
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&rebuild, "rebuild-fts", false, "rebuild the full-text search index from the messages")
	c.Flags().BoolVar(&optimize, "optimize-fts", false, "merge the search index's segments")
	h.addSynchronousFlag(c)
	return c
}

func (h *group) printDoctor(r *doctorReport) {
	h.Printf("store           %s\n", cli.PrintableLine(r.Path))
	h.Printf("file            %s bytes (+ %s WAL), mode %s\n", fmtCount(r.FileBytes), fmtCount(r.WALBytes), cli.OrDash(r.FileMode))
	h.Printf("schema version  %d\n", r.SchemaVersion)
	h.Printf("sessions        %d\n", r.Sessions)
	h.Printf("sqlite          %s (driver %s, %s)\n", r.SQLiteVersion, r.Driver, r.GoVersion)
	h.Printf("integrity       %s\n", cli.PrintableLine(strings.Join(r.Integrity, "; ")))
	h.Printf("search index    %s\n", cli.PrintableLine(r.FTS))
	if r.RebuiltFTS {
		h.Printf("                rebuilt\n")
	}
	if r.OptimizedFTS {
		h.Printf("                optimized\n")
	}
	for _, p := range r.Problems {
		h.Printf("problem: %s\n", cli.PrintableLine(p))
	}
}
