package faults

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// The large session of TestServeExportMemory: bigMessages messages of
// bigMessageBytes each, about 200 MB of text.
const (
	bigMessages     = 10_000
	bigMessageBytes = 20_000
)

// exportPeakBound is the most memory (peak resident set, VmHWM) a serve
// process may reach while it exports the 200 MB session four times at
// once. An export holds one page of messages (about 4 MiB,
// sessiondb.ExportPageBytes) and a 64 KiB write buffer, whatever the
// session's size; the rest is the process itself (its runtime, SQLite's
// page caches, the garbage between two collections). Reading the whole
// session to answer it took 0.9 GB for one export and 3.4 GB for four.
const exportPeakBound = 160 << 20

// TestServeExportMemory exports a session of about 200 MB from a real
// `sessiondb serve`, once and then four times at once, and checks that
// each export is whole (the bytes of `sessiondb export`) and that the
// server's peak memory stayed under exportPeakBound.
func TestServeExportMemory(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(e.Home, "state.db")
	e.must(t, "--db", db, "quickstart")
	start := time.Now()
	sqlitetest.ExecFile(t, db, `INSERT INTO sessions (id, source, model, started_at, message_count) VALUES ('big', 'cli', 'm', 1800000000, ?)`, bigMessages)
	sqlitetest.ExecFile(t, db, `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
INSERT INTO messages (session_id, role, content, timestamp)
SELECT 'big', CASE i % 2 WHEN 0 THEN 'assistant' ELSE 'user' END, 'message ' || i || ' <&> ' || printf('%.*c', ?, 'x'), 1800000000 + i FROM k`,
		bigMessages, bigMessageBytes)
	t.Logf("made a session of %d messages of %d bytes in %v", bigMessages, bigMessageBytes, time.Since(start))

	// What the command line exports: the bytes the server must send.
	want, size := digest(t, e, "--db", db, "export", "big")
	if size < bigMessages*bigMessageBytes {
		t.Fatalf("sessiondb export wrote %d bytes, want more than %d", size, bigMessages*bigMessageBytes)
	}

	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := e.command(ctx, "--db", db, "--read-only", "serve", "--listen", "127.0.0.1:0", "--token", "tok")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	base := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := regexp.MustCompile(`serving on (http://\S+)/ `).FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatalf("serve did not start: %s", stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	before := peakRSS(t, cmd.Process.Pid)

	export := func() {
		start := time.Now()
		resp, err := http.Get(base + "/api/v1/sessions/big/export")
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("export: %d, %d bytes, %v", resp.StatusCode, n, err)
			return
		}
		if got := fmt.Sprintf("%x", h.Sum(nil)); got != want || n != size {
			t.Errorf("the server's export (%d bytes) differs from sessiondb export's (%d bytes)", n, size)
		}
		t.Logf("exported %d bytes in %v", n, time.Since(start))
	}
	export()
	one := peakRSS(t, cmd.Process.Pid)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(export)
	}
	wg.Wait()
	four := peakRSS(t, cmd.Process.Pid)
	t.Logf("serve's peak RSS: %d MiB started, %d MiB after one export, %d MiB after four at once (bound %d MiB)",
		before>>20, one>>20, four>>20, exportPeakBound>>20)
	if four > exportPeakBound {
		t.Errorf("serve's peak RSS reached %d MiB exporting a %d MiB session, over the bound of %d MiB", four>>20, size>>20, exportPeakBound>>20)
	}
}

// digest runs args and returns the SHA-256 (hex) and length of what they
// write to stdout, read as it comes.
func digest(t *testing.T, e env, args ...string) (string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := e.command(ctx, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, out)
	if werr := cmd.Wait(); err != nil || werr != nil {
		t.Fatalf("sessiondb %s: %v %v: %s", strings.Join(args, " "), err, werr, stderr.String())
	}
	return fmt.Sprintf("%x", h.Sum(nil)), n
}

// peakRSS is the peak resident set of process pid (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VmHWM:\s+(\d+) kB$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmHWM in /proc/%d/status", pid)
	}
	var kb int64
	fmt.Sscan(string(m[1]), &kb)
	return kb << 10
}
