package faults

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite"
)

// exampleID is a session of the example store quickstart makes.
const exampleID = "20261006_164519_f28a0c"

// Every history command, by what it needs of the store, with arguments
// that name a session of the example store.
var (
	readCommands = [][]string{
		{"sessions"}, {"show", exampleID}, {"search", "docker"}, {"title", exampleID}, {"lineage", exampleID},
		{"stats"}, {"export"}, {"doctor"}, {"prune", "--older-than", "1", "--dry-run"},
	}
	writeCommands = [][]string{
		{"title", exampleID, "A new title"}, {"fork", exampleID}, {"end", exampleID}, {"reopen", exampleID},
		{"clear", exampleID, "--yes"}, {"delete", exampleID, "--yes"}, {"prune", "--older-than", "1", "--yes"},
		{"doctor", "--rebuild-fts"},
	}
	// createCommands make a store where there is none; %IMPORT% is a file
	// of one session to import.
	createCommands = [][]string{{"import", "%IMPORT%"}, {"quickstart"}}
)

// exampleStore returns the bytes of a sound store holding the example
// conversations, written by quickstart and closed (its WAL checkpointed
// into the file).
func exampleStore(t *testing.T, e env) []byte {
	t.Helper()
	db := filepath.Join(t.TempDir(), "example.db")
	e.must(t, "--db", db, "quickstart")
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(db + "-wal"); err == nil {
		t.Fatalf("quickstart left %s-wal: the store's bytes are not all in the file", db)
	}
	return b
}

// importFile writes a JSONL file of one session for import, in a folder
// every user can read.
func importFile(t *testing.T) string {
	t.Helper()
	dir := sharedFolder(t)
	f := filepath.Join(dir, "one.jsonl")
	line := `{"id":"imported_1","source":"cli","started_at":1700000000,"messages":[{"role":"user","content":"hello","timestamp":1700000001}]}` + "\n"
	if err := os.WriteFile(f, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// damage is one kind of file that is not a sound, writable store.
type damage struct {
	name string
	// make writes the file at path (in a fresh folder) from a sound store.
	make func(t *testing.T, path string, store []byte)
	// asOther runs the commands as another user (see env.as).
	asOther bool
	// readOnly seals the folder read-only after make (readOnlyFolder).
	readOnly bool
	// read, write and create are what each kind of command must do:
	// the exit status and a phrase of the error (none when it succeeds);
	// doctor, when set, is what doctor does instead of read.
	read, write, create outcome
	doctor              *outcome
}

type outcome struct {
	code   int
	want   string
	stdout bool // want is in the output, not the error
	skip   bool // the command has nothing to prove here
}

// TestDamagedFiles gives every history command, reading, writing and
// creating, files that are not a sound store it may write: a garbage page,
// a truncated store, an empty file, a folder, a text file, a store this
// user may not read, and a sound store on a read-only mount. Each command
// ends with a clear error (or, reading what it can, its answer), and the
// folder is left exactly as it was: every file's bytes and mode, and no
// file added.
func TestDamagedFiles(t *testing.T) {
	e := newEnv(t)
	good := exampleStore(t, e)
	imp := importFile(t)
	write := func(b []byte, mode os.FileMode) func(*testing.T, string, []byte) {
		return func(t *testing.T, path string, _ []byte) {
			if err := os.WriteFile(path, b, mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	damaged := outcome{code: 2, want: "the file is damaged"}
	// doctor reports a damaged database with integrity_check's account.
	doctorDamaged := &outcome{code: 1, want: "malformed", stdout: true}
	kinds := []damage{
		{name: "garbage page", make: func(t *testing.T, path string, store []byte) {
			b := append([]byte(nil), store...)
			for i := 100; i < 4096; i++ { // page 1 after the header: the schema
				b[i] = byte(i * 7)
			}
			write(b, 0o644)(t, path, nil)
		}, read: damaged, write: damaged, create: damaged, doctor: doctorDamaged},
		{name: "truncated", make: func(t *testing.T, path string, store []byte) {
			write(store[:3000], 0o644)(t, path, nil)
		}, read: damaged, write: damaged, create: damaged, doctor: doctorDamaged},
		{name: "zero bytes", make: write(nil, 0o644),
			read:   outcome{code: 3, want: "the file is empty"},
			write:  outcome{code: 3, want: "the file is empty"},
			create: outcome{skip: true}}, // an empty file is where a new store goes
		{name: "directory", make: func(t *testing.T, path string, _ []byte) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, read: outcome{code: 2, want: "is a directory"}, write: outcome{code: 2, want: "is a directory"}, create: outcome{code: 2, want: "is a directory"}},
		{name: "text file", make: write([]byte("x\n"), 0o644),
			read:   outcome{code: 2, want: `is not a SQLite database (it starts with "x\n")`},
			write:  outcome{code: 2, want: `is not a SQLite database (it starts with "x\n")`},
			create: outcome{code: 2, want: `is not a SQLite database (it starts with "x\n")`}},
		{name: "no permission", make: func(t *testing.T, path string, store []byte) {
			write(store, 0o000)(t, path, nil)
		}, asOther: true,
			read:   outcome{code: 2, want: "cannot be read by this user"},
			write:  outcome{code: 2, want: "cannot be read by this user"},
			create: outcome{code: 2, want: "cannot be read by this user"}},
		{name: "read-only mount", make: func(t *testing.T, path string, store []byte) {
			write(store, 0o600)(t, path, nil)
		}, readOnly: true,
			read:   outcome{code: 0},
			write:  outcome{code: 2, want: "cannot be written here"},
			create: outcome{code: 2, want: "cannot be written here"}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var dir string
			var seal func()
			switch {
			case k.readOnly:
				dir, seal = readOnlyFolder(t)
			case k.asOther:
				dir = sharedFolder(t)
			default:
				dir = t.TempDir()
			}
			path := filepath.Join(dir, "state.db")
			k.make(t, path, good)
			if seal != nil {
				seal()
			}
			run := e
			if k.asOther && os.Geteuid() == 0 {
				run = e.as(nobody, nobody, dir)
			}
			before := takeSnapshot(t, dir)
			for _, group := range []struct {
				cmds [][]string
				want outcome
			}{{readCommands, k.read}, {writeCommands, k.write}, {createCommands, k.create}} {
				if group.want.skip {
					continue
				}
				for _, c := range group.cmds {
					args := append([]string{"--db", path}, c...)
					for i, a := range args {
						args[i] = strings.ReplaceAll(a, "%IMPORT%", imp)
					}
					r := run.run(t, "", args...)
					want := group.want
					if len(c) == 1 && c[0] == "doctor" && k.doctor != nil {
						want = *k.doctor
					}
					said := r.Stderr
					if want.stdout {
						said = r.Stdout
					}
					if r.Code != want.code || !strings.Contains(said, want.want) {
						t.Errorf("sessiondb %s: %s\nwant exit %d mentioning %q", strings.Join(c, " "), r, want.code, want.want)
					}
					if d := before.differences(takeSnapshot(t, dir)); len(d) > 0 {
						t.Fatalf("sessiondb %s changed the folder: %s", strings.Join(c, " "), strings.Join(d, "; "))
					}
				}
			}
		})
	}
}

// TestNotAStoreKeepsItsMode: a file that is not a store, named with --db or
// reached through a link planted at the default store path, is never
// written or chmodded by any command, reading, writing or creating, which
// each say what they found instead.
func TestNotAStoreKeepsItsMode(t *testing.T) {
	e := newEnv(t)
	imp := importFile(t)
	all := append(append(append([][]string{}, readCommands...), writeCommands...), createCommands...)
	t.Run("--db names a text file", func(t *testing.T) {
		v := newVictims(t)
		for _, c := range all {
			args := append([]string{"--db", v.file}, c...)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "%IMPORT%", imp)
			}
			refused(t, e.run(t, "", args...), v.file+` is not a SQLite database (it starts with "precious`)
		}
		v.intact(t)
	})
	t.Run("link planted at the default store", func(t *testing.T) {
		v := newVictims(t)
		plant(t, v.file, filepath.Join(e.Home, "state.db"))
		for _, c := range all {
			args := append([]string(nil), c...)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "%IMPORT%", imp)
			}
			refused(t, e.run(t, "", args...), "is not a SQLite database")
		}
		v.intact(t)
	})
	t.Run("a store reached through a link keeps its mode", func(t *testing.T) {
		real := filepath.Join(t.TempDir(), "real.db")
		e.must(t, "--db", real, "quickstart")
		if err := os.Chmod(real, 0o640); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(e.Home, "linked.db")
		plant(t, real, link)
		e.must(t, "--db", link, "title", exampleID, "Through a link")
		if fi, err := os.Stat(real); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("the store behind the link: mode %v (%v); a link is never followed to change a mode", fi.Mode(), err)
		}
	})
}

// TestReaderOfAnotherUserLeavesNoFiles: a store its owner made readable
// by others is read by another user, with --read-only and without, and
// that leaves no -wal, -shm or other file of that user's behind: the
// owner's next write succeeds. Its WAL's commits, while the owner's
// writer is alive, are read too.
func TestReaderOfAnotherUserLeavesNoFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs the owner and a reader as two other users, which needs root (CI runs as root)")
	}
	e := newEnv(t)
	dir := sharedFolder(t)
	db := filepath.Join(dir, "state.db")
	const ownerID = 12345
	owner := e.as(ownerID, ownerID, dir)
	reader := e.as(nobody, nobody, dir)
	owner.must(t, "--db", db, "quickstart")
	if err := os.Chmod(db, 0o644); err != nil { // the owner shares it
		t.Fatal(err)
	}
	before := takeSnapshot(t, dir)
	for _, ro := range [][]string{{"--read-only"}, nil} {
		for _, c := range readCommands {
			if c[0] == "doctor" {
				continue // its full-text check needs a writer: see below
			}
			args := append(append(append([]string{}, ro...), "--db", db), c...)
			if r := reader.run(t, "", args...); r.Code != 0 {
				t.Errorf("reader: sessiondb %s: %s", strings.Join(args, " "), r)
			}
			if d := before.differences(takeSnapshot(t, dir)); len(d) > 0 {
				t.Fatalf("reader's sessiondb %s left: %s", strings.Join(args, " "), strings.Join(d, "; "))
			}
		}
	}
	r := reader.run(t, "", "--db", db, "doctor")
	if !strings.Contains(r.Stdout, "integrity       ok") {
		t.Errorf("reader's doctor: %s", r)
	}
	if d := before.differences(takeSnapshot(t, dir)); len(d) > 0 {
		t.Fatalf("reader's doctor left: %s", strings.Join(d, "; "))
	}
	owner.must(t, "--db", db, "title", exampleID, "Still the owner's")

	t.Run("commits in the WAL of a live writer", func(t *testing.T) {
		// The owner's writer stays open with commits in its WAL (the
		// -wal and -shm files are the owner's, readable by others).
		ctx := context.Background()
		st, err := sqlite.Open(ctx, db, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.SetSessionTitle(ctx, exampleID, "Written by a live writer"); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{db, db + "-wal", db + "-shm"} {
			os.Chmod(f, 0o644)
		}
		snap := takeSnapshot(t, dir)
		r := reader.run(t, "", "--db", db, "--json", "title", exampleID)
		if r.Code != 0 || !strings.Contains(r.Stdout, "Written by a live writer") {
			t.Errorf("reader during a live writer: %s", r)
		}
		if d := snap.differences(takeSnapshot(t, dir)); len(d) > 0 {
			t.Errorf("the reader changed the folder: %s", strings.Join(d, "; "))
		}
	})
}
