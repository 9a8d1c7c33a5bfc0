package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// historyCLI is what the history commands share beyond the global flags:
// the clock (so every "now" of one command line is the same injected one)
// and the durability asked for by --synchronous.
type historyCLI struct {
	*app
	now         sessiondb.Clock
	synchronous string
}

// historyCommands returns the history store commands (sessions, show,
// search, title, lineage, stats, export, import, fork, end, reopen, clear,
// delete, prune, doctor) and quickstart.
func historyCommands(a *app) []*cobra.Command {
	return (&historyCLI{app: a, now: time.Now}).commands()
}

// commands builds the history commands on h's streams, flags and clock.
func (h *historyCLI) commands() []*cobra.Command {
	cmds := []*cobra.Command{
		h.sessionsCmd(), h.showCmd(), h.searchCmd(), h.titleCmd(), h.lineageCmd(),
		h.statsCmd(), h.exportCmd(), h.importCmd(), h.forkCmd(), h.endCmd(),
		h.reopenCmd(), h.clearCmd(), h.deleteCmd(), h.pruneCmd(), h.doctorCmd(),
		h.quickstartCmd(),
	}
	for _, c := range cmds {
		// Flag mistakes are the caller's: give them a code (exit 2) and a
		// pointer to the help that would have prevented them.
		c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
			return sessiondb.Errorf(sessiondb.EINVALID, "%v (see `%s --help`)", err, c.CommandPath())
		})
	}
	return cmds
}

// isUsageError reports errors cobra returns for a malformed command line
// outside our own commands (an unknown command or a bad global flag). Cobra
// gives them no type, so their fixed message openings are all there is to
// go by; our own commands return coded errors instead.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{
		"unknown command ", "unknown flag: ", "unknown shorthand flag: ",
		"flag needs an argument: ", "invalid argument ", "bad flag syntax: ",
		"accepts ", "requires at least ", "required flag(s) ",
	} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// storeAccess says what a command needs from the store file.
type storeAccess int

const (
	// readStore: the file must exist; opened read-only under --read-only.
	readStore storeAccess = iota
	// writeStore: the file must exist; refused under --read-only.
	writeStore
	// createStore: the file is created when missing; refused under --read-only.
	createStore
)

// storePath is --db, else the default location.
func (h *historyCLI) storePath() (string, error) {
	if h.dbPath != "" {
		return h.dbPath, nil
	}
	return defaultDBPath()
}

// open opens the history store for one command. A read command never
// creates a file: a missing store is not_found with a hint on making one.
func (h *historyCLI) open(ctx context.Context, what storeAccess) (*sqlite.Store, error) {
	path, err := h.storePath()
	if err != nil {
		return nil, err
	}
	if what != readStore && h.readOnly {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "this command changes the store, and --read-only was given: drop --read-only to run it")
	}
	if what != createStore {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, sessiondb.Errorf(sessiondb.ENOTFOUND,
				"no history store at %s: create one with `sessiondb import examples/conversations.jsonl` or `sessiondb quickstart`, or point --db at an existing state.db", path)
		}
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{
		ReadOnly:    what == readStore && h.readOnly,
		Synchronous: h.synchronous,
		Now:         h.now,
		Logger:      slog.New(slog.NewTextHandler(h.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, err // the store's errors already name the path
	}
	return st, nil
}

// withStore opens the store, runs fn and closes the store, reporting a
// failure to close (an unflushed checkpoint is worth knowing about) only when
// fn itself succeeded.
func (h *historyCLI) withStore(ctx context.Context, what storeAccess, fn func(*sqlite.Store) error) (err error) {
	st, err := h.open(ctx, what)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = sessiondb.Wrap("", cerr, "close history store")
		}
	}()
	return fn(st)
}

// addSynchronousFlag gives a writing command the --synchronous flag.
func (h *historyCLI) addSynchronousFlag(c *cobra.Command) {
	c.Flags().StringVar(&h.synchronous, "synchronous", "", "durability of each commit: normal (default; survives a crash of the process) or full (also survives power loss, slower)")
}

// checkSynchronous validates --synchronous (with bench's parser, so both
// take the same words) before anything is opened.
func (h *historyCLI) checkSynchronous() error {
	if h.synchronous == "" {
		return nil
	}
	s, err := parseSynchronous(h.synchronous)
	h.synchronous = s
	return err
}

// resolveSession turns what the user typed into a session id: an exact id,
// then a unique id prefix, then (if byTitle) a title, where a title resolves
// to the newest session of its lineage ("proj" finds "proj #3").
func resolveSession(ctx context.Context, st *sqlite.Store, ref string, byTitle bool) (string, error) {
	if strings.TrimSpace(ref) == "" {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "the session id is empty: give an id, a unique id prefix or a title (see `sessiondb sessions`)")
	}
	id, err := st.ResolveSessionID(ctx, ref)
	switch sessiondb.ErrorCode(err) {
	case "":
		return id, nil
	case sessiondb.ECONFLICT:
		cands, cerr := sessionsWithPrefix(ctx, st, ref, 10)
		if cerr != nil || len(cands) < 2 {
			return "", sessiondb.Wrap(sessiondb.ECONFLICT, err, "%q is ambiguous", ref)
		}
		return "", sessiondb.Errorf(sessiondb.ECONFLICT, "%q matches several sessions: %s; type more of the id", ref, strings.Join(cands, ", "))
	case sessiondb.ENOTFOUND:
		if byTitle {
			id, terr := st.ResolveSessionByTitle(ctx, ref)
			if terr == nil {
				return id, nil
			}
			if sessiondb.ErrorCode(terr) != sessiondb.ENOTFOUND {
				return "", terr
			}
			return "", sessiondb.Errorf(sessiondb.ENOTFOUND, "no session has the id, id prefix or title %q: list them with `sessiondb sessions`", ref)
		}
		return "", sessiondb.Errorf(sessiondb.ENOTFOUND, "no session has the id or id prefix %q: list them with `sessiondb sessions`", ref)
	}
	return "", err
}

// sessionsWithPrefix lists up to max session ids starting with prefix,
// newest first, to show the candidates of an ambiguous prefix.
func sessionsWithPrefix(ctx context.Context, st *sqlite.Store, prefix string, max int) ([]string, error) {
	var ids []string
	err := eachSession(ctx, st, "", func(s *sessiondb.Session) bool {
		if strings.HasPrefix(s.ID, prefix) {
			ids = append(ids, s.ID)
		}
		return len(ids) < max
	})
	return ids, err
}

// eachSession calls fn for every session of source ("" = all), newest
// first, a page at a time, until fn returns false.
func eachSession(ctx context.Context, st *sqlite.Store, source string, fn func(*sessiondb.Session) bool) error {
	const page = 500
	for off := 0; ; off += page {
		rows, err := st.SearchSessions(ctx, source, page, off)
		if err != nil {
			return err
		}
		for i := range rows {
			if !fn(&rows[i]) {
				return nil
			}
		}
		if len(rows) < page {
			return nil
		}
	}
}

// printJSON writes v as indented JSON on stdout. HTML escaping is off: the
// output is for scripts and people, not for embedding in a web page.
func (h *historyCLI) printJSON(v any) error {
	enc := json.NewEncoder(h.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write output")
	}
	return nil
}

// printf writes human-readable output on stdout.
func (h *historyCLI) printf(format string, args ...any) {
	fmt.Fprintf(h.stdout, format, args...)
}

// Argument checks that return coded errors (exit 2) naming what is missing.

func argsExactly(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return argError(c, "want %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

func argsBetween(min, max int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return argError(c, "want %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

func argsAtLeast(min int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < min {
			return argError(c, "want %s", what)
		}
		return nil
	}
}

func argError(c *cobra.Command, format string, args ...any) error {
	return sessiondb.Errorf(sessiondb.EINVALID, "%s: %s (usage: %s)", c.CommandPath(), fmt.Sprintf(format, args...), c.UseLine())
}

// checkPaging validates --limit and --offset.
func checkPaging(limit, offset int) error {
	if limit < 1 {
		return sessiondb.Errorf(sessiondb.EINVALID, "--limit %d: want 1 or more", limit)
	}
	if offset < 0 {
		return sessiondb.Errorf(sessiondb.EINVALID, "--offset %d: want 0 or more", offset)
	}
	return nil
}
