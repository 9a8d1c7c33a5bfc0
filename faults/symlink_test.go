package faults

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// victims are what a planted link points at: a file of the user's that
// must keep its bytes, mode and time, a folder that must stay empty, and a
// name that must not come to exist (the target of a dangling link).
type victims struct {
	file, dir, absent string
	mtime             time.Time
}

func newVictims(t *testing.T) victims {
	t.Helper()
	dir := t.TempDir()
	v := victims{file: filepath.Join(dir, "precious.txt"), dir: filepath.Join(dir, "folder"), absent: filepath.Join(dir, "absent")}
	if err := os.WriteFile(v.file, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(v.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	v.mtime = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(v.file, v.mtime, v.mtime); err != nil {
		t.Fatal(err)
	}
	return v
}

// intact fails t when anything a link pointed at was changed or created.
func (v victims) intact(t *testing.T) {
	t.Helper()
	fi, err := os.Stat(v.file)
	b, _ := os.ReadFile(v.file)
	if err != nil || string(b) != "precious\n" || fi.Mode().Perm() != 0o644 || !fi.ModTime().Equal(v.mtime) {
		t.Errorf("the file a link pointed at was changed: %q, mode %v, time %v (%v)", b, fi.Mode(), fi.ModTime(), err)
	}
	if des, _ := os.ReadDir(v.dir); len(des) != 0 {
		t.Errorf("the folder a link pointed at was written: %d entries", len(des))
	}
	if fi, _ := os.Stat(v.dir); fi.Mode().Perm() != 0o755 {
		t.Errorf("the folder a link pointed at was chmodded: %v", fi.Mode())
	}
	if _, err := os.Lstat(v.absent); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target of a dangling link was created")
	}
}

// plant puts a link at path pointing at target, making its folder.
func plant(t *testing.T, target, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// refused checks that r failed as invalid (exit 2), with an error naming
// want (the path or what it is).
func refused(t *testing.T, r result, want string) {
	t.Helper()
	if r.Code != 2 || !strings.Contains(r.Stderr, want) {
		t.Errorf("want a refusal (exit 2) naming %q: %s", want, r)
	}
}

// TestSymlinksPlantedWhereWeWrite plants a link at every path a command
// writes (the store's -wal, -shm and -journal, an export, a CPU profile,
// a VACUUM INTO copy, a mailbox's folders and files, its journal, an
// attachment's folder and name, the heartbeat, the host's status file) and
// checks each time that the command refuses with an error naming the path,
// and that what the link points at is left exactly as it was.
func TestSymlinksPlantedWhereWeWrite(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(e.Home, "state.db")
	e.must(t, "--db", db, "quickstart")

	t.Run("store sidecars", func(t *testing.T) {
		for _, suffix := range []string{"-wal", "-shm", "-journal"} {
			for _, target := range []string{"file", "absent"} {
				v := newVictims(t)
				plant(t, map[string]string{"file": v.file, "absent": v.absent}[target], db+suffix)
				refused(t, e.run(t, "", "--db", db, "sessions"), db+suffix)
				refused(t, e.run(t, "", "--db", db, "title", "20260315", "A new title"), db+suffix)
				os.Remove(db + suffix)
				v.intact(t)
			}
		}
		e.must(t, "--db", db, "sessions") // usable again once the link is gone
	})
	t.Run("export target", func(t *testing.T) {
		v := newVictims(t)
		for _, target := range []string{v.file, v.absent, v.dir} {
			out := filepath.Join(e.Home, "backup.jsonl")
			plant(t, target, out)
			refused(t, e.run(t, "", "--db", db, "export", "-o", out), "symbolic link")
		}
		v.intact(t)
	})
	t.Run("cpu profile", func(t *testing.T) {
		v := newVictims(t)
		prof := filepath.Join(e.Home, "cpu.pprof")
		plant(t, v.file, prof)
		refused(t, e.run(t, "", "bench", "--workload", filepath.Join(e.Home, "none.jsonl"), "--cpuprofile", prof, "--quiet"), "symbolic link")
		v.intact(t)
	})
	t.Run("vacuum into", func(t *testing.T) {
		v := newVictims(t)
		if err := os.WriteFile(v.absent+".empty", nil, 0o644); err != nil { // VACUUM INTO takes an empty file
			t.Fatal(err)
		}
		s, err := sqlite.Open(context.Background(), db, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, target := range []string{v.absent, v.absent + ".empty"} {
			copyPath := filepath.Join(e.Home, "compact.db")
			plant(t, target, copyPath)
			if err := s.VacuumInto(context.Background(), copyPath); err == nil || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("VacuumInto through a link to %s: %v", target, err)
			}
		}
		if fi, _ := os.Stat(v.absent + ".empty"); fi.Size() != 0 {
			t.Errorf("the copy was written through the link: %d bytes", fi.Size())
		}
		os.Remove(v.absent + ".empty")
		v.intact(t)
	})

	// The mailbox: each case makes a fresh data root, plants one link and
	// runs the commands that write there.
	session := func(data string) []string { return []string{"--data", data, "--group", "g", "--session", "s"} }
	mb := func(data string, args ...string) []string {
		return append(append([]string{"mailbox"}, args...), session(data)...)
	}
	for _, tc := range []struct {
		name string
		at   string // the planted link, relative to the data root
		dir  bool   // the link points at the victim folder (else the file)
		init bool   // the session exists before the link is planted
		run  [][]string
		want string // in the refusal
	}{
		{name: "agent group folder", at: "g", dir: true, run: [][]string{{"init"}}, want: "not a folder"},
		{name: "session folder", at: "g/s", dir: true, run: [][]string{{"init"}}, want: "not a folder"},
		{name: "inbox folder", at: "g/s/inbox", dir: true, run: [][]string{{"init"}}, want: "not a folder"},
		{name: "outbox folder", at: "g/s/outbox", dir: true, run: [][]string{{"init"}}, want: "not a folder"},
		{name: "inbound.db", at: "g/s/inbound.db", run: [][]string{{"init"}}, want: "not a regular file"},
		{name: "outbound.db", at: "g/s/outbound.db", run: [][]string{{"init"}}, want: "not a regular file"},
		{name: "inbound journal", at: "g/s/inbound.db-journal", init: true, run: [][]string{{"init"}, {"send", "--text", "hi"}}, want: "inbound.db-journal is a symbolic link"},
		{name: "outbound journal", at: "g/s/outbound.db-journal", init: true, run: [][]string{{"agent", "send", "--text", "hi", "--channel-type", "cli", "--platform-id", "me"}, {"ls"}}, want: "outbound.db-journal is a symbolic link"},
		{name: "attachment folder", at: "g/s/inbox/m1", dir: true, init: true,
			run: [][]string{{"send", "--id", "m1", "--content", `{"text":"x","attachments":[{"name":"a.png","data":"aGk="}]}`}}, want: "symbolic link"},
		{name: "attachment file", at: "g/s/inbox/m1/a.png", init: true,
			run: [][]string{{"send", "--id", "m1", "--content", `{"text":"x","attachments":[{"name":"a.png","data":"aGk="}]}`}}, want: "symbolic link"},
		{name: "outbox file folder", at: "g/s/outbox/o1", dir: true, init: true,
			run: [][]string{{"agent", "send", "--id", "o1", "--text", "x", "--channel-type", "cli", "--platform-id", "me", "--file", "@attachment"}}, want: "symbolic link"},
		{name: "heartbeat", at: "g/s/.heartbeat", init: true, run: [][]string{{"agent", "poll"}}, want: ".heartbeat is not a regular file"},
	} {
		t.Run("mailbox "+tc.name, func(t *testing.T) {
			v := newVictims(t)
			data := filepath.Join(t.TempDir(), "data")
			if tc.init {
				e.must(t, mb(data, "init")...)
				// A row to poll, so the heartbeat is touched.
				e.must(t, mb(data, "send", "--id", "m0", "--text", "wake up", "--channel-type", "cli", "--platform-id", "me")...)
			}
			target := v.file
			if tc.dir {
				target = v.dir
			}
			plant(t, target, filepath.Join(data, filepath.FromSlash(tc.at)))
			attachment := filepath.Join(t.TempDir(), "report.txt")
			os.WriteFile(attachment, []byte("report"), 0o600)
			for _, args := range tc.run {
				for i := range args {
					if args[i] == "@attachment" {
						args[i] = attachment
					}
				}
				refused(t, e.run(t, "", mb(data, args...)...), tc.want)
			}
			v.intact(t)
		})
	}

	t.Run("host status file", func(t *testing.T) {
		v := newVictims(t)
		data := filepath.Join(t.TempDir(), "data")
		e.must(t, mb(data, "init")...)
		plant(t, v.file, filepath.Join(data, ".sessiondb-host.json"))
		// The running host cannot write its status there, and says so.
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		cmd := e.command(ctx, "host", "--data", data, "--poll", "20ms", "--sweep", "50ms")
		var logs testkit.Buffer
		cmd.Stderr = &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the host to refuse the status file", func() bool {
			return strings.Contains(logs.String(), "cannot write the host status file") && strings.Contains(logs.String(), "symbolic link")
		})
		// Readers refuse it too, naming it.
		refused(t, e.run(t, "", "mailbox", "status", "--data", data), "symbolic link")
		cmd.Process.Signal(syscall.SIGTERM)
		var exit *exec.ExitError
		if err := cmd.Wait(); err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		v.intact(t)
	})
}
