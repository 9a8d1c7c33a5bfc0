package hostd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// A registry another program wrote (NanoClaw checks no name against our
// data root) may hold agent groups named as the host's own files. A
// message wired to them reaches the chat's other groups; these get an
// error naming the reserved name, no session row and no folder, and the
// socket and the status file in the data root stay as they were.
func TestRouteToReservedAgentGroupLeavesHostFilesAlone(t *testing.T) {
	c := newCentral(t)
	c.group("ag-1", "Helper")
	mg := c.wiredChat("mg-1", "chat-1", "Room", sessiondb.PolicyPublic)
	root := c.host.Layout().Root
	must(t, os.MkdirAll(root, 0o700))
	reserved := []string{sessiondb.HostSocketFile, sessiondb.HostStatusFile, sessiondb.HostLockFile, sessiondb.HostTokenFile}
	for _, id := range reserved {
		sqlitetest.ExecFile(t, c.path, "INSERT INTO agent_groups (id, name, folder, created_at) VALUES (?, ?, ?, ?)",
			id, id, "folder-"+id, "2026-01-01T00:00:00.000Z")
		c.wire(sessiondb.NewWiring{MessagingGroupID: mg.ID, AgentGroupID: id, EngageMode: sessiondb.EngagePattern})
	}

	// No host runs yet: nothing may take the names its files will have.
	checkRoute(t, c, "m1", len(reserved))
	if names := entries(t, root); len(names) != 1 || names[0] != "ag-1" {
		t.Fatalf("data root holds %v, want ag-1 alone", names)
	}

	// The host's files, as a running host keeps them, stay as they are.
	l, err := Listen(filepath.Join(root, DefaultSocketName))
	must(t, err)
	defer l.Close()
	status := []byte(`{"pid":1}` + "\n")
	for _, name := range []string{StatusFile, sessiondb.HostLockFile, sessiondb.HostTokenFile} {
		must(t, os.WriteFile(filepath.Join(root, name), status, 0o600))
	}
	checkRoute(t, c, "m2", len(reserved))
	fi, err := os.Lstat(filepath.Join(root, DefaultSocketName))
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the socket: %v, %v", fi, err)
	}
	for _, name := range []string{StatusFile, sessiondb.HostLockFile, sessiondb.HostTokenFile} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || !bytes.Equal(b, status) {
			t.Errorf("%s: %q, %v; want it untouched", name, b, err)
		}
	}
	if names := entries(t, root); len(names) != 5 {
		t.Errorf("data root holds %v, want ag-1 and the host's four files", names)
	}
}

// checkRoute routes message id into chat-1 and checks that ag-1 got it
// and each of the reserved groups an error naming it reserved, without a
// session.
func checkRoute(t *testing.T, c *central, id string, reserved int) {
	t.Helper()
	res, err := c.router.Route(ctxb, msg(id, "hello"))
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("route: %v, want invalid naming a reserved group", err)
	}
	reached := 0
	for _, d := range res.Deliveries {
		if d.AgentGroupID == "ag-1" {
			if d.Error != "" || d.SessionID == "" {
				t.Errorf("ag-1: %+v, want routed", d)
			}
			reached++
			continue
		}
		if !strings.Contains(d.Error, "reserved") || !strings.Contains(d.Error, d.AgentGroupID) || d.SessionID != "" {
			t.Errorf("%s: %+v, want an error naming it reserved and no session", d.AgentGroupID, d)
		}
		if ss := c.sessions(d.AgentGroupID); len(ss) != 0 {
			t.Errorf("%s: sessions %+v in the registry", d.AgentGroupID, ss)
		}
	}
	if reached != 1 || len(res.Deliveries) != 1+reserved {
		t.Fatalf("deliveries %+v", res.Deliveries)
	}
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
