package sessiondb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// sliceReader is a MessageReader over a list of messages in id order, as
// a backend's queries read them, counting its reads.
type sliceReader struct {
	msgs  []Message
	reads int
}

func (r *sliceReader) MessagesIn(_ context.Context, _ string, ids IDRange, newest bool, limit int) ([]Message, error) {
	r.reads++
	var in []Message
	for _, m := range r.msgs {
		if (!ids.HasAfter || m.ID > ids.After) && (!ids.HasBefore || m.ID < ids.Before) {
			in = append(in, m)
		}
	}
	if newest {
		slices.Reverse(in)
	}
	return in[:min(limit, len(in))], nil
}

func (r *sliceReader) AnyMessage(_ context.Context, _, op string, id int64) (bool, error) {
	for _, m := range r.msgs {
		if (op == "<" && m.ID < id) || (op == "<=" && m.ID <= id) || (op == ">" && m.ID > id) || (op == ">=" && m.ID >= id) {
			return true, nil
		}
	}
	return false, nil
}

// conversation builds messages with ids 1.. from roles: "call" is an
// assistant row with tool calls, "tool" a tool result.
func conversation(roles ...string) []Message {
	out := make([]Message, len(roles))
	for i, role := range roles {
		out[i] = Message{ID: int64(i + 1), Role: role}
		if role == "call" {
			out[i].Role, out[i].ToolCalls = "assistant", json.RawMessage(`[{"id":"c"}]`)
		}
	}
	return out
}

func pageIDs(p *MessagePage) string {
	ids := make([]int64, len(p.Messages))
	for i, m := range p.Messages {
		ids[i] = m.ID
	}
	return fmt.Sprint(ids, " before=", p.HasBefore, " after=", p.HasAfter)
}

// TestReadMessagePage holds the page cut both backends share: which end of
// the session a page starts from, the widening that keeps a tool-call
// group whole at either edge (over more tool rows than one widening read
// returns), the cursors' flags, an empty page's inclusive edge, and the
// refusal of a negative limit or cursor.
func TestReadMessagePage(t *testing.T) {
	ctx := context.Background()
	//                   1       2       3         4       5       6       7          8
	r := &sliceReader{msgs: conversation("user", "call", "tool", "tool", "assistant", "user", "assistant", "user")}
	for _, c := range []struct {
		p    Page
		want string
	}{
		{Page{Limit: 2}, "[7 8] before=true after=false"},
		{Page{Limit: 2, FromStart: true}, "[1 2 3 4] before=false after=true"}, // forward over the group's results
		{Page{Limit: 2, BeforeID: 5}, "[2 3 4] before=true after=true"},        // back to the row with the calls
		{Page{Limit: 1, AfterID: 2}, "[3 4] before=true after=true"},           // a tool row at the far edge
		{Page{Limit: 5, AfterID: 1, BeforeID: 4}, "[2 3 4] before=true after=true"},
		{Page{AfterID: 8}, "[] before=true after=false"},  // the cursor's own row is before it
		{Page{AfterID: 9}, "[] before=true after=false"},  // past the end
		{Page{BeforeID: 1}, "[] before=false after=true"}, // the cursor's row is after it
		{Page{}, "[1 2 3 4 5 6 7 8] before=false after=false"},
	} {
		page, err := ReadMessagePage(ctx, r, "s", c.p)
		if err != nil {
			t.Fatalf("%+v: %v", c.p, err)
		}
		if got := pageIDs(page); got != c.want {
			t.Errorf("%+v: %s, want %s", c.p, got, c.want)
		}
	}

	empty, err := ReadMessagePage(ctx, &sliceReader{}, "s", Page{})
	if err != nil || empty.Messages == nil || len(empty.Messages) != 0 || empty.HasBefore || empty.HasAfter {
		t.Errorf("empty session: %+v %v, want an empty (non-nil) page", empty, err)
	}

	users := make([]string, 60)
	for i := range users {
		users[i] = "user"
	}
	page, err := ReadMessagePage(ctx, &sliceReader{msgs: conversation(users...)}, "s", Page{})
	if err != nil || len(page.Messages) != DefaultPageLimit || page.Messages[0].ID != 11 || !page.HasBefore {
		t.Fatalf("default page of 60: %s, %v", pageIDs(page), err)
	}

	// 40 tool results after one call, more than one widening read, all
	// join a page that ends at the call or starts among them.
	roles := []string{"user", "call"}
	for range 40 {
		roles = append(roles, "tool")
	}
	for len(roles) < 60 {
		roles = append(roles, "user")
	}
	long := &sliceReader{msgs: conversation(roles...)}
	page, err = ReadMessagePage(ctx, long, "s", Page{})
	if err != nil || len(page.Messages) != 59 || page.Messages[0].ID != 2 || !page.HasBefore {
		t.Errorf("newest 50 of 60 starting inside the group: %s, %v", pageIDs(page), err)
	}
	page, err = ReadMessagePage(ctx, long, "s", Page{FromStart: true, Limit: 2})
	if err != nil || len(page.Messages) != 42 || page.Messages[41].ID != 42 || !page.HasAfter {
		t.Errorf("page ending at a call with 40 results: %d messages, %v", len(page.Messages), err)
	}
	page, err = ReadMessagePage(ctx, long, "s", Page{BeforeID: 43, Limit: 3})
	if err != nil || len(page.Messages) != 41 || page.Messages[0].ID != 2 {
		t.Errorf("page starting inside a group of 40 results: %s, %v", pageIDs(page), err)
	}

	for _, p := range []Page{{Limit: -1}, {BeforeID: -1}, {AfterID: -2}} {
		reads := r.reads
		if _, err := ReadMessagePage(ctx, r, "s1", p); ErrorCode(err) != EINVALID {
			t.Errorf("%+v: %v, want invalid", p, err)
		}
		if r.reads != reads {
			t.Errorf("%+v: read the store before refusing the page", p)
		}
	}
}
