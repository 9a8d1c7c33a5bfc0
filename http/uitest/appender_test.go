package uitest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// envAppender, set to a state.db path, turns this test binary into the
// other process of the live tests: it opens the store and appends the
// messages it reads from stdin (one JSON appendCmd a line), answering
// each with the id and the wall-clock time of its commit.
const envAppender = "SESSIONDB_UITEST_APPENDER"

// appendCmd is one message for the appender to write.
type appendCmd struct {
	Session    string `json:"session"`
	Role       string `json:"role"`
	Content    string `json:"content,omitempty"`
	ToolCalls  any    `json:"tool_calls,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
}

// appended is the appender's answer: the message's id and when the append
// returned (its commit), in Unix nanoseconds.
type appended struct {
	ID          int64  `json:"id"`
	CommittedNS int64  `json:"committed_ns"`
	Error       string `json:"error,omitempty"`
}

func appenderMain() int {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, os.Getenv(envAppender), sqlite.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "appender:", err)
		return 1
	}
	defer st.Close()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c appendCmd
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, "appender:", err)
			return 1
		}
		m := sessiondb.NewMessage{SessionID: c.Session, Role: c.Role, ToolCalls: c.ToolCalls}
		if c.Content != "" {
			m.Content = &c.Content
		}
		if c.ToolCallID != "" {
			m.ToolCallID = &c.ToolCallID
		}
		if c.ToolName != "" {
			m.ToolName = &c.ToolName
		}
		id, err := st.AppendMessage(ctx, m)
		a := appended{ID: id, CommittedNS: time.Now().UnixNano()}
		if err != nil {
			a.Error = err.Error()
		}
		if err := out.Encode(a); err != nil {
			return 1
		}
	}
	return 0
}

// appender is a running appender process.
type appender struct {
	t   testing.TB
	in  io.WriteCloser
	out *json.Decoder
}

// startAppender starts this test binary again as a process that appends to
// the store at path; it is stopped when the test ends.
func startAppender(t testing.TB, path string) *appender {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envAppender+"="+path)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("appender process: %v", err)
		}
	})
	return &appender{t: t, in: in, out: json.NewDecoder(out)}
}

// append has the other process write c, and returns its id and the time
// its append returned.
func (a *appender) append(c appendCmd) (int64, time.Time) {
	a.t.Helper()
	b, _ := json.Marshal(c)
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		a.t.Fatal(err)
	}
	var r appended
	if err := a.out.Decode(&r); err != nil {
		a.t.Fatalf("appender: %v", err)
	}
	if r.Error != "" {
		a.t.Fatalf("appender: %s", r.Error)
	}
	return r.ID, time.Unix(0, r.CommittedNS)
}
