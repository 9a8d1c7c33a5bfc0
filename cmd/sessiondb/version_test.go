package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	sdbhttp "github.com/sessiondb/sessiondb/http"
)

// TestVersionFacesAgree: `sessiondb version` (text and --json),
// --version, doctor, the server's /healthz, MCP's serverInfo over HTTP and
// over stdio (`sessiondb mcp`) all report one version. It is compared
// face with face, never with git: .ci/run builds with -buildvcs=false.
func TestVersionFacesAgree(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "state.db")
	clitest.Must(t, []string{"--db", db, "quickstart"}, groups()...)

	var js struct {
		Version, GoVersion, Driver, SQLiteVersion string
	}
	r := clitest.Must(t, []string{"version", "--json"}, groups()...)
	if err := json.Unmarshal([]byte(r.Stdout), &js); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	_ = json.Unmarshal([]byte(r.Stdout), &raw)
	for _, k := range []string{"version", "go_version", "driver", "sqlite_version"} {
		if s, _ := raw[k].(string); s == "" {
			t.Errorf("version --json: %q is empty or missing:\n%s", k, r.Stdout)
		}
	}
	want := raw["version"].(string)

	faces := map[string]string{}
	text := clitest.Must(t, []string{"version"}, groups()...).Stdout
	faces["version"] = strings.TrimPrefix(strings.SplitN(text, "\n", 2)[0], "sessiondb ")
	if !strings.Contains(text, "sqlite") || !strings.Contains(text, "go") {
		t.Errorf("version does not show Go and SQLite:\n%s", text)
	}
	faces["--version"] = strings.TrimSuffix(strings.TrimPrefix(clitest.Must(t, []string{"--version"}, groups()...).Stdout, "sessiondb "), "\n")
	var doc struct{ Version string }
	if err := json.Unmarshal([]byte(clitest.Must(t, []string{"--db", db, "--json", "doctor"}, groups()...).Stdout), &doc); err != nil {
		t.Fatal(err)
	}
	faces["doctor --json"] = doc.Version
	doctorText := clitest.Must(t, []string{"--db", db, "doctor"}, groups()...).Stdout
	if !strings.Contains(doctorText, "sessiondb       "+want+"\n") {
		t.Errorf("doctor does not show the version %q:\n%s", want, doctorText)
	}

	st, err := store.Open(ctx, db, store.Options{ReadOnly: true, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := sdbhttp.NewServer(sdbhttp.Config{History: st, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() { stop(); <-served; srv.Close() }()
	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ Version string }
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	faces["/healthz"] = health.Version

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	faces["MCP over HTTP"] = cs.InitializeResult().ServerInfo.Version
	cs.Close()
	faces["MCP over stdio"] = stdioMCPVersion(t, db)

	for face, got := range faces {
		if got != want {
			t.Errorf("%s reports version %q, version --json %q", face, got, want)
		}
	}
}

// stdioMCPVersion runs `sessiondb mcp` on pipes and returns the version
// its handshake gives.
func stdioMCPVersion(t *testing.T, db string) string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(context.Background(), cli.New(inR, outW, io.Discard), []string{"--db", db, "--read-only", "mcp"}, groups()...)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := cs.InitializeResult().ServerInfo.Version
	cs.Close()
	inW.Close()
	<-done
	return v
}
