package route_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// freeLoopbackAddr returns a loopback address no one listens on now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

const tcpEvent = `{"channel_type":"telegram","platform_id":"chat-1","message_id":"%s","sender":{"id":"42","name":"Ann"},"text":"hello","is_group":true}`

// A host serving its endpoint on loopback TCP makes a token (or takes the
// one given), writes it 0600 into the data root for as long as it runs,
// and takes events only with it: `route --host ADDR` finds it there,
// $SESSIONDB_HOST_TOKEN and --token override it, and a wrong one is
// refused (invalid) with nothing routed.
func TestRouteThroughTCPEndpoint(t *testing.T) {
	t.Setenv(hostd.TokenEnv, "")
	for _, given := range []string{"", "given-token"} {
		t.Run("token "+given, func(t *testing.T) {
			p := clitest.NewControlPlane(t, groups...)
			p.WireHelper([]string{"--name", "Team", "--group-chat", "--policy", "public"}, "--engage", "pattern")
			addr := freeLoopbackAddr(t)
			args := p.Args("host", "--listen", addr, "--poll", "20ms")
			if given != "" {
				args = append(args, "--token", given)
			}
			_, hostErr, stop := clitest.Start(clitest.Options{}, args, groups...)
			testkit.WaitFor(t, "the host's TCP endpoint", func() bool { return strings.Contains(hostErr.String(), "router: serving events") })
			if !strings.Contains(hostErr.String(), hostd.TokenFile(p.Data)) {
				t.Errorf("the log does not name the token file:\n%s", hostErr)
			}
			fi, err := os.Stat(hostd.TokenFile(p.Data))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("token file: %v, %v; want mode 0600", fi, err)
			}
			token, found, err := hostd.ReadTokenFile(p.Data)
			if err != nil || !found || given == "" && len(token) != 48 || given != "" && token != given {
				t.Fatalf("token file holds %q (%v, %v), given %q", token, found, err, given)
			}

			res := p.Route(strings.Replace(tcpEvent, "%s", "m1", 1), "--host", addr)
			if res.Message == nil || res.Message.Outcome != hostd.RouteRouted {
				t.Fatalf("route with the token file: %+v", res)
			}
			res = p.Route(strings.Replace(tcpEvent, "%s", "m2", 1), "--host", addr, "--token", token)
			if res.Message == nil || res.Message.Outcome != hostd.RouteRouted {
				t.Fatalf("route --token: %+v", res)
			}
			wrong := func(name string, extra ...string) {
				t.Helper()
				r := clitest.Run(context.Background(), clitest.Options{Stdin: strings.NewReader(strings.Replace(tcpEvent, "%s", "m-"+name, 1) + "\n")},
					p.Args(append([]string{"route", "--host", addr}, extra...)...), groups...)
				if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, "needs the host's token") {
					t.Errorf("%s: exit %d, %q; want a refusal naming the token", name, r.Code, r.Stderr)
				}
			}
			wrong("flag", "--token", token+"x")
			t.Setenv(hostd.TokenEnv, "not-"+token)
			wrong("env")
			t.Setenv(hostd.TokenEnv, "")
			var list struct{ Sessions []struct{ ID string } }
			p.JSON(&list, "admin", "sessions", "list")
			if len(list.Sessions) != 1 {
				t.Fatalf("sessions %+v, want the one m1 and m2 made", list.Sessions)
			}
			var rows struct{ Inbound []struct{ ID string } }
			runJSON(t, &rows, "--json", "mailbox", "ls", "--data", p.Data, "--group", "ag-helper", "--session", list.Sessions[0].ID)
			if len(rows.Inbound) != 2 {
				t.Fatalf("inbound %+v, want m1 and m2 alone", rows.Inbound)
			}

			if code := stop(); code != 0 {
				t.Fatalf("host exited %d\n%s", code, hostErr)
			}
			if _, err := os.Stat(hostd.TokenFile(p.Data)); !os.IsNotExist(err) {
				t.Errorf("token file left after a clean stop: %v", err)
			}
		})
	}
}

// --token belongs to a TCP endpoint: with the socket it is refused, by
// host and by route.
func TestTokenIsForTCP(t *testing.T) {
	p := clitest.NewControlPlane(t, groups...)
	clitest.Fails(t, []clitest.Failure{
		{Name: "host on the socket", Args: p.Args("host", "--token", "x"), Code: cli.ExitInvalid, Want: "--token guards the event endpoint on a TCP --listen"},
		{Name: "host without a registry", Args: []string{"host", "--data", p.Data, "--listen", "127.0.0.1:0", "--token", "x"}, Code: cli.ExitInvalid, Want: "--token"},
		{Name: "route to a socket", Args: p.Args("route", "--host", p.Data+"/host.sock", "--token", "x"), Code: cli.ExitInvalid, Want: "needs none"},
	}, groups...)
}
