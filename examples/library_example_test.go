package examples_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Example_library is the README's library example: open a store, record a
// short conversation with a tool call, end the session and search it.
func Example_library() {
	dir, err := os.MkdirTemp("", "sessiondb-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "state.db"), sqlite.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	id, err := st.CreateSession(ctx, sessiondb.NewSession{
		ID: "20260101_120000_a1b2c3", Source: "cli", Model: "anthropic/claude-sonnet-4.6",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	text := func(s string) *string { return &s }
	for _, m := range []sessiondb.NewMessage{
		{SessionID: id, Role: "user", Content: text("Which files in /var/log are the biggest?")},
		{SessionID: id, Role: "assistant", Content: text(""), ToolCalls: []map[string]any{
			{"id": "call_1", "type": "function", "function": map[string]any{"name": "terminal", "arguments": `{"command":"du -sh /var/log/* | sort -h | tail -3"}`}},
		}},
		{SessionID: id, Role: "tool", ToolCallID: text("call_1"), ToolName: text("terminal"), Content: text("1.2G\t/var/log/journal")},
		{SessionID: id, Role: "assistant", Content: text("The systemd journal: 1.2 GB of log files.")},
	} {
		if _, err := st.AppendMessage(ctx, m); err != nil {
			fmt.Println(err)
			return
		}
	}
	if _, err := st.SetSessionTitle(ctx, id, "Big log files"); err != nil {
		fmt.Println(err)
		return
	}
	if err := st.EndSession(ctx, id, "user_exit"); err != nil {
		fmt.Println(err)
		return
	}

	hits, err := st.SearchMessages(ctx, "log files", sessiondb.SearchFilter{Roles: []string{"assistant"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hits {
		fmt.Println(h.SessionID, h.Role, h.Snippet)
	}
	s, err := st.GetSession(ctx, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(*s.Title, s.MessageCount, "messages,", s.ToolCallCount, "tool call")
	// Output:
	// 20260101_120000_a1b2c3 assistant The systemd journal: 1.2 GB of >>>log<<< >>>files<<<.
	// Big log files 4 messages, 1 tool call
}
