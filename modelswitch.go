package sessiondb

import (
	"context"
	"errors"
	"slices"
)

// ModelRoute is one row of a newer Hermes' session_model_usage (schema
// 20 on): what a session spent on one model and billing route. Hermes
// adds each API call's usage to the row of the model live at the call,
// so FirstSeen and LastSeen are the times of the route's first and last
// call (epoch seconds; 0 where the file has no such column).
type ModelRoute struct {
	Model            string  `json:"model"`
	BillingProvider  string  `json:"billing_provider"`
	BillingBaseURL   string  `json:"billing_base_url"`
	BillingMode      string  `json:"billing_mode"`
	APICalls         int64   `json:"api_call_count"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	ActualCostUSD    float64 `json:"actual_cost_usd"`
	CostStatus       string  `json:"cost_status"`
	FirstSeen        float64 `json:"first_seen"`
	LastSeen         float64 `json:"last_seen"`
}

// ModelSwitch is a place in a session's transcript where its API calls
// went to another model: Before is the id of the first message of the
// new model's stretch (0 when that stretch has no message yet).
type ModelSwitch struct {
	Before int64
	From   ModelRoute
	To     ModelRoute
}

// SessionModels is the models a session used, in the order of their
// first call, and where the transcript switched from one to the next.
type SessionModels struct {
	Routes   []ModelRoute
	Switches []ModelSwitch
}

// Switched reports whether the session used more than one model.
func (m *SessionModels) Switched() bool { return m != nil && len(m.Routes) > 1 }

// At returns the switch shown before message id, if one is.
func (m *SessionModels) At(id int64) *ModelSwitch {
	if m == nil {
		return nil
	}
	for i := range m.Switches {
		if m.Switches[i].Before == id && id != 0 {
			return &m.Switches[i]
		}
	}
	return nil
}

// errRouteRead stops ReadSessionModels' export read once the session row
// (with its usage rows) is in: the messages are read apart, lighter.
var errRouteRead = errors.New("session row read")

// ReadSessionModels reads the usage rows of session id (none on a file
// without session_model_usage) and, when it used more than one model,
// places each switch in its transcript. Messages carry no model, so the
// place is inferred from the times Hermes records: Hermes writes a
// turn's user message when the turn starts and adds each call's usage
// as the call ends, so a switch from route A to route B lies before the
// first user message written after A's last call (the turn B answered).
// When the two routes' calls interleave (a switch and a switch back,
// whose rows Hermes sums), it lies before the first message written
// after B's first call. Only live messages (GetMessagesPage) are looked
// at; a session with one model reads no message.
func ReadSessionModels(ctx context.Context, st Store, id string) (*SessionModels, error) {
	var rec map[string]any
	err := st.ExportSessionPages(ctx, id, func(r map[string]any) error {
		rec = r
		return errRouteRead
	}, func([]map[string]any) error { return errRouteRead })
	if err != nil && !errors.Is(err, errRouteRead) {
		return nil, err
	}
	out := &SessionModels{}
	rows, _ := rec[UsageKey].([]map[string]any)
	for _, r := range rows {
		out.Routes = append(out.Routes, ModelRoute{
			Model: routeText(r["model"]), BillingProvider: routeText(r["billing_provider"]),
			BillingBaseURL: routeText(r["billing_base_url"]), BillingMode: routeText(r["billing_mode"]),
			APICalls: routeInt(r["api_call_count"]), InputTokens: routeInt(r["input_tokens"]),
			OutputTokens: routeInt(r["output_tokens"]), CacheReadTokens: routeInt(r["cache_read_tokens"]),
			CacheWriteTokens: routeInt(r["cache_write_tokens"]), ReasoningTokens: routeInt(r["reasoning_tokens"]),
			EstimatedCostUSD: routeReal(r["estimated_cost_usd"]), ActualCostUSD: routeReal(r["actual_cost_usd"]),
			CostStatus: routeText(r["cost_status"]), FirstSeen: routeReal(r["first_seen"]), LastSeen: routeReal(r["last_seen"]),
		})
	}
	// A row without times (an older usage table) sorts last, in key order.
	slices.SortStableFunc(out.Routes, func(a, b ModelRoute) int {
		switch {
		case a.FirstSeen == b.FirstSeen:
			return 0
		case a.FirstSeen == 0:
			return 1
		case b.FirstSeen == 0:
			return -1
		case a.FirstSeen < b.FirstSeen:
			return -1
		}
		return 1
	})
	if !out.Switched() {
		return out, nil
	}
	for i := 1; i < len(out.Routes); i++ {
		if out.Routes[i].FirstSeen == 0 {
			break // no time to place it by: the header lists it
		}
		out.Switches = append(out.Switches, ModelSwitch{From: out.Routes[i-1], To: out.Routes[i]})
	}
	next := 0 // the first switch not yet placed
	var after int64
	for next < len(out.Switches) {
		p, err := st.GetMessagesPage(ctx, id, Page{AfterID: after, FromStart: true, Limit: 500})
		if err != nil {
			return nil, err
		}
		for i := range p.Messages {
			m := &p.Messages[i]
			for next < len(out.Switches) && switchesBefore(&out.Switches[next], m) {
				out.Switches[next].Before = m.ID
				next++
			}
		}
		if len(p.Messages) == 0 || !p.HasAfter {
			break
		}
		after = p.Messages[len(p.Messages)-1].ID
	}
	return out, nil
}

// switchesBefore reports whether switch s lies before message m (see
// ReadSessionModels).
func switchesBefore(s *ModelSwitch, m *Message) bool {
	if s.To.FirstSeen >= s.From.LastSeen {
		return m.Role == "user" && m.Timestamp > s.From.LastSeen
	}
	return m.Timestamp > s.To.FirstSeen
}

// routeText, routeInt and routeReal read a value of a usage row as the
// backends give it (ImportValue's conversions); a value of another type,
// which SQLite's loose typing allows, reads as its zero.
func routeText(v any) string {
	s, _ := v.(string)
	return s
}

func routeInt(v any) int64 {
	n, _ := ImportValue("", KindInteger, v)
	i, _ := n.(int64)
	return i
}

func routeReal(v any) float64 {
	n, _ := ImportValue("", KindReal, v)
	f, _ := n.(float64)
	return f
}
