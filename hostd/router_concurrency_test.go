package hostd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Concurrency shape: 2 processes × 8 goroutines, each goroutine routing one
// event for every (chat, thread) key, all at once. Two agent groups are
// wired to every chat, so every event fans out to both.
const (
	concProcs    = 2
	concRoutines = 8
	concChats    = 3
	concThreads  = 3 // thread "" (no thread) and 2 threads
)

// concKeys are the (chat, thread) keys of the concurrency test.
func concKeys() (keys [][2]string) {
	for c := 0; c < concChats; c++ {
		for th := 0; th < concThreads; th++ {
			thread := ""
			if th > 0 {
				thread = "th-" + strconv.Itoa(th)
			}
			keys = append(keys, [2]string{"chat-" + strconv.Itoa(c), thread})
		}
	}
	return keys
}

// TestRouteConcurrentProcesses routes the same keys from 8 goroutines in
// each of 2 processes at once, over one central file and one data root:
// exactly one session per (agent group, chat, thread), holding every
// event once with distinct seqs. The processes start routing together: each
// reports ready, then both are told to go.
func TestRouteConcurrentProcesses(t *testing.T) {
	if os.Getenv("HOSTD_ROUTE_CHILD") != "" {
		routeChild(t)
		return
	}
	dir := t.TempDir()
	central, data := filepath.Join(dir, "v2.db"), filepath.Join(dir, "v2-sessions")
	reg, err := sqlite.OpenCentral(ctxb, central, sqlite.CentralOptions{})
	must(t, err)
	for _, ag := range []string{"ag-1", "ag-2"} {
		_, err := reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: ag, Name: ag, Folder: ag})
		must(t, err)
	}
	for c := 0; c < concChats; c++ {
		mg, err := reg.CreateMessagingGroup(ctxb, sessiondb.NewMessagingGroup{ID: "mg-" + strconv.Itoa(c), ChannelType: "slack",
			PlatformID: "chat-" + strconv.Itoa(c), IsGroup: true, UnknownSenderPolicy: sessiondb.PolicyPublic})
		must(t, err)
		for _, ag := range []string{"ag-1", "ag-2"} {
			_, err := reg.CreateWiring(ctxb, sessiondb.NewWiring{MessagingGroupID: mg.ID, AgentGroupID: ag, EngageMode: sessiondb.EngagePattern})
			must(t, err)
		}
	}
	must(t, reg.Close())

	type child struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		out   *bufio.Reader
		errch chan error
	}
	var kids []*child
	for p := 0; p < concProcs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRouteConcurrentProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "HOSTD_ROUTE_CHILD="+strconv.Itoa(p), "HOSTD_ROUTE_CENTRAL="+central, "HOSTD_ROUTE_DATA="+data)
		in, err := cmd.StdinPipe()
		must(t, err)
		out, err := cmd.StdoutPipe()
		must(t, err)
		var stderr testkit.Buffer
		cmd.Stderr = &stderr
		must(t, cmd.Start())
		k := &child{cmd: cmd, in: in, out: bufio.NewReader(out), errch: make(chan error, 1)}
		kids = append(kids, k)
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		line, err := k.out.ReadString('\n')
		if err != nil || line != "ready\n" {
			t.Fatalf("child %d: %q %v\n%s", p, line, err, stderr.String())
		}
		go func() {
			rest, _ := io.ReadAll(k.out)
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%v\nstdout: %s\nstderr: %s", err, rest, stderr.String())
			}
			k.errch <- err
		}()
	}
	for _, k := range kids {
		_, err := io.WriteString(k.in, "go\n")
		must(t, err)
		k.in.Close()
	}
	for i, k := range kids {
		if err := <-k.errch; err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}

	reg, err = sqlite.OpenCentral(ctxb, central, sqlite.CentralOptions{})
	must(t, err)
	defer reg.Close()
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: data}})
	must(t, err)
	page, err := reg.ListAgentSessions(ctxb, sessiondb.AgentSessionFilter{Limit: 1000})
	must(t, err)
	want := 2 * concChats * concThreads
	if len(page.Sessions) != want {
		t.Fatalf("%d sessions, want %d (one per agent, chat and thread)", len(page.Sessions), want)
	}
	seen := map[string]bool{}
	for _, s := range page.Sessions {
		key := s.AgentGroupID + "|" + s.MessagingGroupID + "|" + s.ThreadID
		if seen[key] {
			t.Fatalf("twin session for %s", key)
		}
		seen[key] = true
		rows, err := h.InboundRows(ctxb, s.Ref(), 0)
		must(t, err)
		if len(rows) != concProcs*concRoutines {
			t.Fatalf("session %s holds %d rows, want %d", key, len(rows), concProcs*concRoutines)
		}
		seqs := map[int64]bool{}
		for _, r := range rows {
			if seqs[r.Seq] || r.Seq%2 != 0 {
				t.Fatalf("session %s: seq %d repeated or odd", key, r.Seq)
			}
			seqs[r.Seq] = true
		}
	}
}

// routeChild is one process of TestRouteConcurrentProcesses.
func routeChild(t *testing.T) {
	p := os.Getenv("HOSTD_ROUTE_CHILD")
	reg, err := sqlite.OpenCentral(ctxb, os.Getenv("HOSTD_ROUTE_CENTRAL"), sqlite.CentralOptions{})
	must(t, err)
	defer reg.Close()
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: os.Getenv("HOSTD_ROUTE_DATA")}})
	must(t, err)
	r, err := NewRouter(RouterConfig{Registry: reg, Host: h})
	must(t, err)
	fmt.Println("ready")
	if line, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil || line != "go\n" {
		t.Fatalf("no go: %q %v", line, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, concRoutines)
	for g := 0; g < concRoutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, k := range concKeys() {
				ev := Event{ChannelType: "slack", PlatformID: k[0], ThreadID: k[1], IsGroup: true, Sender: Sender{ID: "U" + p},
					MessageID: fmt.Sprintf("p%s-g%d-k%d", p, g, i), Text: "hello"}
				res, err := r.Route(ctxb, ev)
				if err == nil && (res.Outcome != RouteRouted || len(res.Deliveries) != 2) {
					err = fmt.Errorf("event %s: %+v", ev.MessageID, res)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
