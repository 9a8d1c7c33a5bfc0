package serve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/history"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestServeOnALoopbackName: --listen NAME:PORT, NAME being 127.0.0.1 to
// the resolver (an /etc/hosts entry of the operator's), is loopback to the
// command as to the server: serve starts without a token, making one as
// on 127.0.0.1, prints the URL under NAME, and answers requests naming
// NAME that carry the token (a rebinding site's, without it, are
// refused). The command took the name for a remote address and the
// server for loopback, so every request naming it was refused.
func TestServeOnALoopbackName(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	clitest.Must(t, []string{"--db", db, "quickstart"}, history.Commands)
	t.Setenv("SESSIONDB_TOKEN", "")
	named := func(f *cli.Factory) []*cobra.Command {
		g := &group{Factory: f, lookupHost: func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "devbox.test" {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		}}
		return []*cobra.Command{g.serveCmd()}
	}
	out, errOut, stop := clitest.Start(clitest.Options{}, []string{"--db", db, "serve", "--listen", "devbox.test:0"}, named)
	defer stop()
	line := regexp.MustCompile(`serving on http://(127\.0\.0\.1:(\d+))/[\s\S]*open http://devbox\.test:(\d+)/\?token=([0-9a-f]{48})`)
	testkit.WaitFor(t, "serve to print its address", func() bool {
		return line.MatchString(out.String()) || errOut.String() != ""
	})
	m := line.FindStringSubmatch(out.String())
	if m == nil || m[2] != m[3] {
		t.Fatalf("serve --listen devbox.test:0 printed %q, stderr %q", out, errOut)
	}
	get := func(token string) int {
		req, _ := http.NewRequest("GET", "http://"+m[1]+"/api/v1/sessions?limit=1", nil)
		req.Host = "devbox.test:" + m[3]
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(m[4]); code != http.StatusOK {
		t.Errorf("a request naming devbox.test with the printed token: %d, want 200", code)
	}
	if code := get(""); code != http.StatusForbidden {
		t.Errorf("a request naming devbox.test without the token: %d, want 403", code)
	}
}
