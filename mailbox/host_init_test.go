package mailbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// TestInitSessionPublishesWholeFiles: a daemon sweeping the data root takes
// a folder with an inbound.db for a session, so InitSession must make both
// files whole before inbound.db appears: each file appears under its name
// only once built (never written there while it is made), outbound.db
// first.
func TestInitSessionPublishesWholeFiles(t *testing.T) {
	h, err := NewHost(HostOptions{Layout: Layout{Root: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ref := SessionRef{AgentGroupID: "ag", SessionID: "s"}
	dir, _ := h.Layout().SessionDir(ref)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	if err := h.InitSession(ctxb, ref); err != nil {
		t.Fatal(err)
	}
	// A last event after InitSession's, to know the queue is drained.
	end := filepath.Join(dir, "end")
	if err := os.WriteFile(end, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for ev := range w.Events {
		if ev.Name == end {
			break
		}
		base := filepath.Base(ev.Name)
		if base == InboundFile || base == OutboundFile {
			seen = append(seen, base+" "+ev.Op.String())
		}
	}
	if got := strings.Join(seen, ", "); got != "outbound.db CREATE, inbound.db CREATE" {
		t.Fatalf("events on the mailbox files: %s; want each created whole, outbound.db first", got)
	}
	// And both are whole, with nothing left of the building.
	if n := f0(t, h, ref); n != 0 {
		t.Fatalf("a new session has %d inbound rows", n)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".init-") {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

func f0(t *testing.T, h *Host, ref SessionRef) int {
	t.Helper()
	rows, err := h.InboundRows(ctxb, ref, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.OutboundRows(ctxb, ref, 0); err != nil {
		t.Fatal(err)
	}
	return len(rows)
}
