package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
	faces["/healthz"] = healthzVersion(t, base)

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

// healthzVersion returns the version the server at base says on /healthz.
func healthzVersion(t *testing.T, base string) string {
	t.Helper()
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
	return health.Version
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

// TestReleaseVersionInEveryFace: a release build sets the version with
// the linker flag docs/cli.md gives, and the built binary's faces all
// report it: version (text and --json), --version, doctor, serve's
// /healthz and `sessiondb mcp`'s serverInfo. Relinking the cached
// packages with one -X flag takes a few seconds.
func TestReleaseVersionInEveryFace(t *testing.T) {
	const release = "v9.8.7-test"
	dir := t.TempDir()
	bin := filepath.Join(dir, "sessiondb")
	args := []string{"build", "-o", bin, "-ldflags", "-X github.com/sessiondb/sessiondb/internal/version.release=" + release}
	if store.Driver == "mattn" {
		args = append(args, "-tags", "sqlite_fts5")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := filepath.Join(dir, "state.db")
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "SESSIONDB_HOME="+dir, "HOME="+dir)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sessiondb %v: %v", args, err)
		}
		return string(out)
	}
	run("", "--db", db, "quickstart")

	faces := map[string]string{}
	faces["version"] = strings.SplitN(run("", "version"), "\n", 2)[0]
	faces["--version"] = strings.TrimSuffix(run("", "--version"), "\n")
	var js, doc struct{ Version string }
	if err := json.Unmarshal([]byte(run("", "version", "--json")), &js); err != nil {
		t.Fatal(err)
	}
	faces["version --json"] = "sessiondb " + js.Version
	if err := json.Unmarshal([]byte(run("", "--db", db, "--json", "doctor")), &doc); err != nil {
		t.Fatal(err)
	}
	faces["doctor --json"] = "sessiondb " + doc.Version

	// MCP over stdio: the handshake, then stdin ends.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}` + "\n"
	var hello struct {
		Result struct {
			ServerInfo struct{ Version string } `json:"serverInfo"`
		}
	}
	if err := json.Unmarshal([]byte(strings.SplitN(run(init, "--db", db, "--read-only", "mcp"), "\n", 2)[0]), &hello); err != nil {
		t.Fatal(err)
	}
	faces["mcp serverInfo"] = "sessiondb " + hello.Result.ServerInfo.Version

	cmd := exec.CommandContext(ctx, bin, "--db", db, "--read-only", "serve", "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "SESSIONDB_HOME="+dir, "HOME="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	base := ""
	for sc := bufio.NewScanner(stdout); base == "" && sc.Scan(); {
		if m := regexp.MustCompile(`serving on (http://\S+)/ `).FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatal("serve did not say where it listens")
	}
	go io.Copy(io.Discard, stdout)
	faces["/healthz"] = "sessiondb " + healthzVersion(t, base)

	for face, got := range faces {
		if got != "sessiondb "+release {
			t.Errorf("%s reports %q, want the release set by the linker, %q", face, got, "sessiondb "+release)
		}
	}
}
