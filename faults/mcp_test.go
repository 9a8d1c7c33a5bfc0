package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMCPStdioSurvivesMalformedLines feeds a real `sessiondb mcp` a valid
// request, then each kind of line that is not a JSON-RPC message, then
// more valid requests: every valid request is answered, every bad line
// is answered with a JSON-RPC error (a parse error for what is not JSON,
// an invalid request for the rest, with the line's id when it has a
// readable one), and the process is still running until its stdin ends.
// The SDK's transport ended the session on the first bad line, leaving
// the requests after it unanswered.
func TestMCPStdioSurvivesMalformedLines(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(e.Home, "state.db")
	e.must(t, "--db", db, "quickstart")

	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := e.command(ctx, "--db", db, "mcp")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	send := func(line string) {
		t.Helper()
		if _, err := stdin.Write([]byte(line + "\n")); err != nil {
			t.Fatalf("write %q: %v (stderr: %s)", line, err, stderr.String())
		}
	}
	// answer is one line of stdout, decoded.
	type answer struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	next := func(what string) answer {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("mcp ended its output before %s; stderr: %s", what, stderr.String())
			}
			var a answer
			if err := json.Unmarshal([]byte(l), &a); err != nil {
				t.Fatalf("%s: the answer %q is not JSON: %v", what, l, err)
			}
			return a
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer for %s within 30 s; stderr: %s", what, stderr.String())
		}
		return answer{}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"faults","version":"1"}}}`)
	if a := next("initialize"); string(a.ID) != "1" || a.Error != nil || len(a.Result) == 0 {
		t.Fatalf("initialize answered %+v", a)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	bad := []struct {
		name, line string
		code       int64
		id         string
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":20,"method":`, -32700, "null"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/list\",\"params\":{\"x\":\"\xff\xfe\"}}", -32700, "null"},
		{"empty batch", `[]`, -32600, "null"},
		{"a batch", `[{"jsonrpc":"2.0","id":22,"method":"ping"}]`, -32600, "null"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":23,"method":"tools/list"}`, -32600, "23"},
		{"no jsonrpc", `{"id":"x24","method":"tools/list"}`, -32600, `"x24"`},
		{"an object id", `{"jsonrpc":"2.0","id":{"n":25},"method":"tools/list"}`, -32600, "null"},
		{"a number", `42`, -32600, "null"},
		{"a string", `"tools/list"`, -32600, "null"},
		{"a method that is not a string", `{"jsonrpc":"2.0","id":26,"method":7}`, -32600, "26"},
	}
	for _, b := range bad {
		send(b.line)
		a := next(b.name)
		if a.Error == nil || a.Error.Code != b.code || string(a.ID) != b.id || a.Error.Message == "" {
			t.Errorf("%s: answered %s %+v, want error %d with id %s", b.name, a.ID, a.Error, b.code, b.id)
		}
	}

	// The session goes on: a request after the bad lines is answered, and
	// so is a tool call.
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if a := next("tools/list"); string(a.ID) != "2" || a.Error != nil || !strings.Contains(string(a.Result), "search_sessions") {
		t.Fatalf("tools/list after the bad lines answered %s %+v %s", a.ID, a.Error, a.Result)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_sessions","arguments":{"query":"docker","limit":1}}}`)
	if a := next("search_sessions"); string(a.ID) != "3" || a.Error != nil || !strings.Contains(string(a.Result), `"session_id":"20260315_092437_c9a6ff"`) {
		t.Fatalf("search_sessions after the bad lines answered %s %+v %s", a.ID, a.Error, a.Result)
	}
	select {
	case err := <-exited:
		t.Fatalf("mcp exited (%v) before its stdin ended; stderr: %s", err, stderr.String())
	default:
	}

	// Its stdin ending ends it, cleanly.
	stdin.Close()
	if l, ok := <-lines; ok {
		t.Errorf("mcp wrote %q after its last answer", l)
	}
	if err := <-exited; err != nil {
		t.Fatalf("mcp ended with %v once its stdin ended; stderr: %s", err, stderr.String())
	}
}

// TestMCPStdioAnswersBeforeItsEnd gives a real `sessiondb mcp` its
// requests and then the end of its stdin at once (`printf ... | sessiondb
// mcp`): every request read before the end is answered before it exits.
// The SDK's transport ended the session at the end of stdin, the answers
// of the requests still running unwritten.
func TestMCPStdioAnswersBeforeItsEnd(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(e.Home, "state.db")
	e.must(t, "--db", db, "quickstart")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"faults","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_sessions","arguments":{"query":"docker"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_session","arguments":{"session_id":"20260315_092437_c9a6ff","limit":2}}}`,
		`not even JSON`,
	}, "\n") + "\n"
	r := e.run(t, in, "--db", db, "mcp")
	if r.Code != 0 {
		t.Fatalf("mcp: %s", r)
	}
	answered := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("the answer %q is not JSON: %v", l, err)
		}
		answered[string(a.ID)] = len(a.Result) > 0
	}
	for _, id := range []string{"1", "2", "3", "4"} {
		if !answered[id] {
			t.Errorf("request %s has no result; stdout:\n%s", id, clip(r.Stdout))
		}
	}
	if _, ok := answered["null"]; !ok {
		t.Errorf("the line that is not JSON has no error answer; stdout:\n%s", clip(r.Stdout))
	}
}
