// Package browsertest starts the browser that sessiondb's browser tests
// drive (http/uitest, and the fault suite's hostile pages): Debian's
// Chromium, headless, through the DevTools protocol (chromedp). It is for
// tests only.
//
// SESSIONDB_CHROMIUM names the browser's binary (default: chromium on
// PATH). Without a browser the tests skip, saying why, unless
// SESSIONDB_REQUIRE_CHROMIUM=1 (CI sets it): then they fail.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The environment the package reads.
const (
	EnvRequire  = "SESSIONDB_REQUIRE_CHROMIUM"
	EnvChromium = "SESSIONDB_CHROMIUM"
)

// Path finds the browser: $SESSIONDB_CHROMIUM, else Debian's chromium (or
// another Chromium build) on PATH.
func Path() (string, error) {
	if p := os.Getenv(EnvChromium); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH (Debian: apt-get install chromium)")
}

// Start starts Chromium with extra options after the defaults and returns
// its chromedp context (tabs derive from it) and stop, which ends it and
// removes its files.
func Start(extra ...chromedp.ExecAllocatorOption) (context.Context, func(), error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "sessiondb-chromium-")
	if err != nil {
		return nil, nil, err
	}
	// A fresh profile each run; no sandbox because CI runs as root (the
	// pages are the tests' own, served on loopback); no network of its own
	// (the machine's network is closed, and the pages must need none).
	// Its profile and its temporary files (shared memory goes there, see
	// disable-dev-shm-usage) live in one folder, removed when it stops.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Env("TMPDIR="+tmp),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
	)
	opts = append(opts, extra...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	stop := func() {
		cancel()
		cancelAlloc()
		os.RemoveAll(dir)
	}
	// The first run starts the browser; it must not carry a timeout (that
	// would end the browser with it), so the start is bounded apart.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err = <-started:
	case <-time.After(60 * time.Second):
		err = errors.New("chromium did not start within 60 s")
	}
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("start %s: %w", path, err)
	}
	return ctx, stop, nil
}

// Unavailable ends t for a browser that could not start (err): a failure
// when SESSIONDB_REQUIRE_CHROMIUM=1, else a skip saying why.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("Chromium is required (%s=1): %v", EnvRequire, err)
	}
	t.Skipf("no browser: %v (set %s=1 to fail instead)", err, EnvRequire)
}
