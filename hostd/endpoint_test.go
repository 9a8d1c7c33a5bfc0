package hostd

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// The endpoint listens on loopback or a private socket only.
func TestListenRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:7000", "example.com:80", "[::]:0"} {
		_, err := Listen(addr)
		wantCode(t, err, sessiondb.EINVALID)
		if !strings.Contains(err.Error(), "loopback") {
			t.Fatalf("%s: %v", addr, err)
		}
	}
	l, err := Listen("127.0.0.1:0")
	must(t, err)
	l.Close()

	sock := filepath.Join(t.TempDir(), "run", DefaultSocketName)
	l, err = Listen(sock)
	must(t, err)
	fi, err := os.Stat(sock)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v", fi.Mode().Perm())
	}
	// Served: a second host is refused.
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err = Listen(sock)
	wantCode(t, err, sessiondb.ECONFLICT)
	l.Close()
	// A file that is not a socket is never removed.
	plain := filepath.Join(t.TempDir(), "not-a-socket")
	must(t, os.WriteFile(plain, []byte("keep"), 0o600))
	_, err = Listen("unix:" + plain)
	wantCode(t, err, sessiondb.EINVALID)
	if b, _ := os.ReadFile(plain); string(b) != "keep" {
		t.Fatal("the file was touched")
	}
}

// Events posted to the endpoint are routed as they arrive and answered one
// line each, in order; a malformed line is answered with its error and
// does not stop the rest.
func TestEndpointRoutesLines(t *testing.T) {
	c := newCentral(t)
	c.group("ag-1", "Helper")
	c.wiredChat("mg-1", "chat-1", "Room", sessiondb.PolicyPublic)

	sock := filepath.Join(t.TempDir(), DefaultSocketName)
	l, err := Listen(sock)
	must(t, err)
	ctx, cancel := context.WithCancel(ctxb)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, l, c.router, ServeOptions{Grace: time.Second}) }()
	if !Reachable(ctxb, sock) {
		t.Fatal("endpoint not reachable")
	}
	body := `{"channel_type":"telegram","platform_id":"chat-1","message_id":"e1","text":"one","is_group":true}

{"channel_type":"telegram","platform_id":"chat-1","message_id":"e2","text":7}
{"type":"click","channel_type":"telegram","user_id":"1","card_id":"nope","option":0}
{"channel_type":"telegram","platform_id":"chat-1","message_id":"e3","text":"three","is_group":true}
`
	var got []LineResult
	must(t, SendLines(ctxb, sock, "", strings.NewReader(body), func(r LineResult) error {
		got = append(got, r)
		return nil
	}))
	if len(got) != 4 {
		t.Fatalf("%d results: %+v", len(got), got)
	}
	if got[0].Line != 1 || got[0].Message == nil || got[0].Message.Outcome != RouteRouted {
		t.Fatalf("line 1: %+v", got[0])
	}
	if got[1].Line != 3 || got[1].Code != sessiondb.EINVALID || !strings.Contains(got[1].Error, "text") {
		t.Fatalf("line 3: %+v", got[1])
	}
	if got[2].Line != 4 || got[2].Code != sessiondb.ENOTFOUND || got[2].Click == nil {
		t.Fatalf("line 4: %+v", got[2])
	}
	if got[3].Line != 5 || got[3].Message.Deliveries[0].SessionID != got[0].Message.Deliveries[0].SessionID {
		t.Fatalf("line 5: %+v", got[3])
	}
	cancel()
	must(t, <-served)
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	err = SendLines(ctxb, sock, "", strings.NewReader("{}\n"), func(LineResult) error { return nil })
	wantCode(t, err, sessiondb.ENOTFOUND)
	if Reachable(ctxb, sock) {
		t.Fatal("reachable after shutdown")
	}
	var d net.Dialer
	if _, err := d.DialContext(ctxb, "unix", sock); err == nil {
		t.Fatal("still accepting")
	}
}
