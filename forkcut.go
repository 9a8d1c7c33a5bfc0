package sessiondb

import "encoding/json"

// ForkRow is what the fork cut needs of a stored message.
type ForkRow struct {
	ID         int64
	Role       string
	ToolCallID string
	// ToolCalls is the stored tool_calls text; HasToolCalls is false for NULL.
	ToolCalls    string
	HasToolCalls bool
}

func (r ForkRow) toolCalls() int64 { return StoredToolCallCount(r.ToolCalls, r.HasToolCalls) }

// ForkCut returns the index of the last of rows (a session's messages in
// insertion order) that ForkSession copies when asked for the rows with
// id <= at; -1 for none (IMP-11). A cut inside a tool-call group (an
// assistant row with tool_calls and the tool rows right after it) moves to
// the group's end when every call has its answer, else to just before the
// assistant row, so the copy never holds a call without its result.
func ForkCut(rows []ForkRow, at int64) int {
	k := -1
	for i, r := range rows {
		if r.ID <= at {
			k = i
		}
	}
	if k < 0 {
		return -1
	}
	a := k
	for a >= 0 && rows[a].Role == "tool" {
		a--
	}
	if a < 0 || rows[a].Role != "assistant" || rows[a].toolCalls() == 0 {
		return k
	}
	g := a
	for g+1 < len(rows) && rows[g+1].Role == "tool" {
		g++
	}
	if groupComplete(rows[a], rows[a+1:g+1]) {
		return g
	}
	return a - 1
}

// ForkToolCalls sums the tool calls of rows, the copied session's
// tool_call_count.
func ForkToolCalls(rows []ForkRow) int64 {
	var n int64
	for _, r := range rows {
		n += r.toolCalls()
	}
	return n
}

// groupComplete reports whether the tool rows answer every call of the
// assistant row: by tool_call_id when the calls carry ids, else by count.
func groupComplete(call ForkRow, answers []ForkRow) bool {
	var calls []struct {
		ID string `json:"id"`
	}
	want := call.toolCalls()
	if json.Unmarshal([]byte(call.ToolCalls), &calls) == nil && len(calls) > 0 {
		got := map[string]bool{}
		for _, r := range answers {
			got[r.ToolCallID] = true
		}
		ids := 0
		for _, c := range calls {
			if c.ID == "" {
				continue
			}
			ids++
			if !got[c.ID] {
				return false
			}
		}
		if ids == len(calls) {
			return true
		}
	}
	return int64(len(answers)) >= want
}

// ForkModelConfig returns the model_config JSON of a fork of src: the
// source's stored config (an object; anything else is replaced), then
// own's keys, then "_branched_from": src (newer Hermes' branch marker).
func ForkModelConfig(src, stored string, hasStored bool, own map[string]any) (string, error) {
	cfg := map[string]any{}
	if hasStored {
		_ = json.Unmarshal([]byte(stored), &cfg) // a non-object config is replaced
		if cfg == nil {
			cfg = map[string]any{}
		}
	}
	for k, v := range own {
		cfg[k] = v
	}
	cfg["_branched_from"] = src
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", Errorf(EINVALID, "fork: model_config: %v", err)
	}
	return string(b), nil
}
