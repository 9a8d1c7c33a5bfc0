package faults

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// smallDisk is a folder on a file system the test can fill and free: a
// tmpfs of a few MB when this process may mount one (root), else an
// ordinary folder whose commands run under a file-size limit (prlimit's
// RLIMIT_FSIZE), which fails their writes past it the same way, while
// "freeing" lifts the limit. full says whether it is full now.
type smallDisk struct {
	dir    string
	tmpfs  bool
	filler string
	full   bool
}

func newSmallDisk(t *testing.T) *smallDisk {
	t.Helper()
	d := &smallDisk{dir: filepath.Join(t.TempDir(), "disk")}
	if err := os.Mkdir(d.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs", d.dir).CombinedOutput(); err == nil {
			d.tmpfs = true
			t.Cleanup(func() { exec.Command("umount", d.dir).Run() })
		} else {
			t.Logf("mount refused (%v: %s): commands run under a file-size limit instead", err, bytes.TrimSpace(out))
		}
	}
	if !d.tmpfs {
		if _, err := exec.LookPath("prlimit"); err != nil {
			t.Fatal("neither a tmpfs (needs root) nor prlimit (util-linux) is available to make a disk full")
		}
	}
	d.filler = filepath.Join(d.dir, "filler")
	return d
}

// fill leaves about margin bytes free.
func (d *smallDisk) fill(t *testing.T, margin int64) {
	t.Helper()
	d.full = true
	if !d.tmpfs {
		return
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	f, err := os.OpenFile(d.filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for free > margin {
		n := min(int64(len(chunk)), free-margin)
		if _, err := f.Write(chunk[:n]); err != nil {
			break // full already
		}
		free -= n
	}
}

// free makes room again.
func (d *smallDisk) free(t *testing.T) {
	t.Helper()
	d.full = false
	if d.tmpfs {
		if err := os.Remove(d.filler); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// limit wraps cmd in the file-size limit while the disk is "full" on a
// system where it cannot be mounted: writes past limitBytes then fail.
func (d *smallDisk) limit(cmd *exec.Cmd, limitBytes int64) *exec.Cmd {
	if d.tmpfs || !d.full {
		return cmd
	}
	args := append([]string{fmt.Sprintf("--fsize=%d", limitBytes), "--", cmd.Path}, cmd.Args[1:]...)
	lim := exec.Command("prlimit", args...)
	lim.Env, lim.Dir, lim.Stdin, lim.Stdout, lim.Stderr = cmd.Env, cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr
	return lim
}

// fullError reports whether stderr holds SQLite's or the system's word for
// a full disk (or, under a file-size limit, the refused write).
func fullError(stderr string) bool {
	for _, w := range []string{"database or disk is full", "no space left on device", "file too large", "disk i/o error"} {
		if strings.Contains(strings.ToLower(stderr), w) {
			return true
		}
	}
	return false
}

// leftovers lists what in dir (recursively) is neither a whole database
// (a non-empty file SQLite's integrity_check passes) nor one of SQLite's
// own companion files, nor in keep: temporary and half-made files.
func leftovers(t *testing.T, dir string, keep ...string) []string {
	t.Helper()
	var bad []string
	filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || slices.Contains(keep, de.Name()) {
			return err
		}
		name := de.Name()
		for _, suf := range []string{"-wal", "-shm", "-journal"} {
			if strings.HasSuffix(name, suf) {
				return nil
			}
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		if !strings.HasSuffix(name, ".db") || fi.Size() == 0 {
			bad = append(bad, fmt.Sprintf("%s (%d bytes)", p, fi.Size()))
			return nil
		}
		if r := sqlitetest.QueryFile(t, p, "PRAGMA integrity_check"); len(r) != 1 || r[0][0] != "ok" {
			bad = append(bad, fmt.Sprintf("%s (integrity_check %v)", p, r))
		}
		return nil
	})
	return bad
}

// TestDiskFull fills the disk under each kind of write: appends, an import,
// mailbox enqueues and a mailbox init. Each fails with the system's or
// SQLite's word for a full disk, loses nothing it acknowledged, leaves no
// empty or half-made file, and works again once space is freed.
func TestDiskFull(t *testing.T) {
	e := newEnv(t)
	var figures []string

	t.Run("append", func(t *testing.T) {
		ctx := context.Background()
		d := newSmallDisk(t)
		db := filepath.Join(d.dir, "state.db")
		s, err := sqlite.Open(ctx, db, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		d.fill(t, 512<<10)
		cmd := d.limit(child("appender", db, "full"), 1<<20)
		out, stderr := testkit.StartReading(t, cmd)
		acked := map[string]bool{}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 {
				acked["full payload "+f[1]] = true
			}
		}
		if err := cmd.Wait(); err == nil || !fullError(stderr.String()) {
			t.Fatalf("appending to a full disk ended with %v: %s; want SQLite's full-disk error", err, stderr.String())
		}
		if len(acked) == 0 {
			t.Fatalf("no append was acknowledged before the disk filled (%s): nothing to hold the store to", stderr.String())
		}
		d.free(t)
		s, err = sqlite.Open(ctx, db, sqlite.Options{})
		if err != nil {
			t.Fatalf("reopen after freeing space: %v", err)
		}
		defer s.Close()
		ms, err := s.GetMessages(ctx, "full")
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, m := range ms {
			have[*m.Content] = true
		}
		for c := range acked {
			if !have[c] {
				t.Errorf("acknowledged %q lost", c)
			}
		}
		c := "after freeing space"
		if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "full", Role: "user", Content: &c}); err != nil {
			t.Errorf("append after freeing space: %v", err)
		}
		if lines, err := s.IntegrityCheck(ctx); err != nil || lines[0] != "ok" {
			t.Errorf("integrity_check %q, %v", lines, err)
		}
		if err := s.FTSIntegrityCheck(ctx); err != nil {
			t.Errorf("full-text check: %v", err)
		}
		if bad := leftovers(t, d.dir, "filler"); len(bad) > 0 {
			t.Errorf("left behind: %v", bad)
		}
		figures = append(figures, fmt.Sprintf("append: %d acknowledged before the disk filled, %d present", len(acked), len(ms)))
	})

	t.Run("import", func(t *testing.T) {
		d := newSmallDisk(t)
		db := filepath.Join(d.dir, "state.db")
		var lines []string
		for i := range 300 {
			lines = append(lines, fmt.Sprintf(`{"id":"imp%03d","source":"cli","started_at":1700000000,"messages":[{"role":"user","content":%q,"timestamp":1700000001}]}`,
				i, strings.Repeat(fmt.Sprintf("line %d of a long import ", i), 120)))
		}
		in := filepath.Join(t.TempDir(), "big.jsonl")
		if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		empty := filepath.Join(t.TempDir(), "empty.jsonl")
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		e.must(t, "--db", db, "import", empty) // the store, before the disk fills
		d.fill(t, 1<<20)
		r := e.runCmd(t, d.limit(e.command(context.Background(), "--db", db, "import", in), 2<<20))
		if r.Code == 0 || !fullError(r.Stderr) {
			t.Fatalf("import onto a full disk: %s; want it refused with the full-disk error", r)
		}
		d.free(t)
		if bad := leftovers(t, d.dir, "filler"); len(bad) > 0 {
			t.Errorf("left behind: %v", bad)
		}
		before := sqlitetest.QueryFile(t, db, "SELECT count(*) FROM sessions")[0][0]
		e.must(t, "--db", db, "import", in) // the rest, once there is room
		n := sqlitetest.QueryFile(t, db, "SELECT count(*) FROM sessions")[0][0]
		if n != int64(300) {
			t.Errorf("%v sessions after importing again; want all 300", n)
		}
		e.must(t, "--db", db, "doctor")
		figures = append(figures, fmt.Sprintf("import: %v of 300 sessions in when the disk filled, 300 after freeing space", before))
	})

	t.Run("mailbox enqueue", func(t *testing.T) {
		d := newSmallDisk(t)
		e.must(t, "mailbox", "init", "--data", d.dir, "--group", "g", "--session", "s")
		d.fill(t, 256<<10)
		sent := 0
		var last result
		for i := 0; i < 5000; i++ {
			last = e.runCmd(t, d.limit(e.command(context.Background(), "mailbox", "send", "--data", d.dir, "--group", "g", "--session", "s",
				"--text", fmt.Sprintf("message %d %s", i, strings.Repeat("x", 8000))), 1<<20))
			if last.Code != 0 {
				break
			}
			sent++
		}
		if last.Code == 0 || !fullError(last.Stderr) {
			t.Fatalf("after %d sends the disk is still not full, or the refusal is unclear: %s", sent, last)
		}
		if sent == 0 {
			t.Fatalf("no send was acknowledged before the disk filled: nothing to hold the mailbox to")
		}
		d.free(t)
		inbound := filepath.Join(d.dir, "g", "s", "inbound.db")
		have := sqlitetest.QueryFile(t, inbound, "SELECT count(*) FROM messages_in")[0][0]
		if have != int64(sent) {
			t.Errorf("%v rows in inbound.db after %d acknowledged sends", have, sent)
		}
		e.must(t, "mailbox", "send", "--data", d.dir, "--group", "g", "--session", "s", "--text", "after freeing space")
		if bad := leftovers(t, d.dir, "filler"); len(bad) > 0 {
			t.Errorf("left behind: %v", bad)
		}
		figures = append(figures, fmt.Sprintf("mailbox enqueue: %d acknowledged before the disk filled, %v present", sent, have))
	})

	t.Run("mailbox init", func(t *testing.T) {
		d := newSmallDisk(t)
		d.fill(t, 0)
		r := e.runCmd(t, d.limit(e.command(context.Background(), "mailbox", "init", "--data", d.dir, "--group", "g", "--session", "s"), 0))
		if r.Code == 0 || !fullError(r.Stderr) {
			t.Fatalf("mailbox init on a full disk: %s; want the full-disk error", r)
		}
		if bad := leftovers(t, d.dir, "filler"); len(bad) > 0 {
			t.Errorf("left behind: %v", bad)
		}
		d.free(t)
		e.must(t, "mailbox", "init", "--data", d.dir, "--group", "g", "--session", "s")
		e.must(t, "mailbox", "send", "--data", d.dir, "--group", "g", "--session", "s", "--text", "hello")
		if bad := leftovers(t, d.dir, "filler"); len(bad) > 0 {
			t.Errorf("left behind after init: %v", bad)
		}
		figures = append(figures, "mailbox init: refused on the full disk, nothing left behind, made once space was freed")
	})
	for _, f := range figures {
		t.Logf("disk full, %s", f)
	}
}
