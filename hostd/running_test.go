package hostd

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// TestStatusFileRunningOnlyForKnownContainers runs the daemon without a
// waker (HeartbeatRuntime) beside an agent whose heartbeat is fresh: the
// sweep treats it as alive, but the status file never says a container
// runs for it, since none was started (what a requeue is refused for).
func TestStatusFileRunningOnlyForKnownContainers(t *testing.T) {
	root := filepath.Join(t.TempDir(), "v2-sessions")
	setup, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "seen"}
	if err := setup.InitSession(ctxb, ref); err != nil {
		t.Fatal(err)
	}
	dir, _ := setup.Layout().SessionDir(ref)
	a, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.TouchHeartbeat(); err != nil {
		t.Fatal(err)
	}
	log := &testkit.Buffer{}
	_, cancel, done := startDaemon(t, root, mailbox.DelivererFunc(func(context.Context, mailbox.SessionRef, mailbox.OutboundRow) (string, error) {
		return "ok", nil
	}), log)
	defer func() {
		cancel()
		<-done
	}()
	testkit.WaitFor(t, "the host status file", func() bool {
		_, found, err := ReadStatus(root)
		return err == nil && found
	})
	// The file is rewritten every tick (20ms): several ticks must pass
	// without it naming a running container.
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		st, _, err := ReadStatus(root)
		if err != nil {
			t.Fatal(err)
		}
		if st.Sessions[ref.String()].Running {
			t.Fatalf("the status file says a container runs for %s, which only has a fresh heartbeat: %+v", ref, st.Sessions)
		}
	}
}
