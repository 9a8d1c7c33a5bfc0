package sessiondb

import (
	"strings"
	"testing"
)

// TestDecideEngage holds one wiring's decision to spec A4/A5/A9: the three
// engage modes, both gates on every message that would be written (context
// included: a deliberate deviation from NanoClaw), and fail-open patterns (JavaScript-only syntax included).
func TestDecideEngage(t *testing.T) {
	member := known("tg:1", nil, "ag")
	stranger := known("tg:9", nil)
	group := MessagingGroup{ID: "mg", IsGroup: true, UnknownSenderPolicy: PolicyStrict}
	dm := MessagingGroup{ID: "mg", IsGroup: false, UnknownSenderPolicy: PolicyStrict}
	wiring := func(mode EngageMode, pattern string, edit ...func(*Wiring)) Wiring {
		w := Wiring{ID: "w", AgentGroupID: "ag", MessagingGroupID: "mg", EngageMode: mode, EngagePattern: pattern}
		for _, e := range edit {
			e(&w)
		}
		return w
	}
	accumulate := func(w *Wiring) { w.IgnoredMessagePolicy = IgnoredAccumulate }
	knownOnly := func(w *Wiring) { w.SenderScope = ScopeKnown }
	cases := []struct {
		name       string
		in         EngageInput
		outcome    Outcome
		engaged    bool
		patternErr bool
		drop       DropReason
	}{
		{"'.' engages on empty text", EngageInput{Wiring: wiring(EngagePattern, "."), Chat: group, Sender: member}, OutcomeEngage, true, false, ""},
		{"empty pattern engages like '.'", EngageInput{Wiring: wiring(EngagePattern, ""), Chat: group, Text: "x", Sender: member}, OutcomeEngage, true, false, ""},
		{"pattern matches unanchored", EngageInput{Wiring: wiring(EngagePattern, `deploy\s+\d+`), Chat: group, Text: "please deploy  42 now", Sender: member}, OutcomeEngage, true, false, ""},
		{"pattern is case-sensitive", EngageInput{Wiring: wiring(EngagePattern, "Deploy"), Chat: group, Text: "deploy", Sender: member}, OutcomeDrop, false, false, ""},
		{"invalid pattern fails open", EngageInput{Wiring: wiring(EngagePattern, "(unclosed"), Chat: group, Text: "anything", Sender: member}, OutcomeEngage, true, true, ""},
		{"JavaScript lookahead fails open", EngageInput{Wiring: wiring(EngagePattern, `^(?=.*bot)`), Chat: group, Text: "no", Sender: member}, OutcomeEngage, true, true, ""},
		{"JavaScript backreference fails open", EngageInput{Wiring: wiring(EngagePattern, `(a)\1`), Chat: group, Text: "b", Sender: member}, OutcomeEngage, true, true, ""},
		{"mention engages on a mention", EngageInput{Wiring: wiring(EngageMention, ""), Chat: group, IsMention: true, Sender: member}, OutcomeEngage, true, false, ""},
		{"mention ignores chatter", EngageInput{Wiring: wiring(EngageMention, ""), Chat: group, Sender: member}, OutcomeDrop, false, false, ""},
		{"NULL mode reads as mention", EngageInput{Wiring: wiring("", ""), Chat: group, IsMention: true, Sender: member}, OutcomeEngage, true, false, ""},
		{"sticky engages on a mention", EngageInput{Wiring: wiring(EngageMentionSticky, ""), Chat: dm, IsMention: true, Sender: member}, OutcomeEngage, true, false, ""},
		{"sticky sticks in a group with a session", EngageInput{Wiring: wiring(EngageMentionSticky, ""), Chat: group, ActiveSession: true, Sender: member}, OutcomeEngage, true, false, ""},
		{"sticky needs a session", EngageInput{Wiring: wiring(EngageMentionSticky, ""), Chat: group, Sender: member}, OutcomeDrop, false, false, ""},
		{"sticky never sticks in a DM", EngageInput{Wiring: wiring(EngageMentionSticky, ""), Chat: dm, ActiveSession: true, Sender: member}, OutcomeDrop, false, false, ""},
		{"not engaged keeps a member's text as context", EngageInput{Wiring: wiring(EngageMention, "", accumulate, knownOnly), Chat: group, Sender: member}, OutcomeAccumulate, false, false, ""},
		{"not engaged keeps no context from a stranger the gate refuses", EngageInput{Wiring: wiring(EngageMention, "", accumulate), Chat: group, Sender: stranger}, OutcomeDrop, false, false, DropUnknownSenderStrict},
		{"not engaged keeps no context the sender scope refuses", EngageInput{Wiring: wiring(EngageMention, "", accumulate, knownOnly), Chat: MessagingGroup{IsGroup: true, UnknownSenderPolicy: PolicyPublic}, Sender: stranger}, OutcomeDrop, false, false, ""},
		{"not engaged keeps a stranger's context in a public chat", EngageInput{Wiring: wiring(EngageMention, "", accumulate), Chat: MessagingGroup{IsGroup: true, UnknownSenderPolicy: PolicyPublic}, Sender: stranger}, OutcomeAccumulate, false, false, ""},
		{"not engaged keeps no context from an unidentified sender", EngageInput{Wiring: wiring(EngageMention, "", accumulate), Chat: group}, OutcomeDrop, false, false, DropUnknownSenderStrict},
		{"engaged stranger is dropped by the gate", EngageInput{Wiring: wiring(EngagePattern, ".", accumulate), Chat: group, Sender: stranger}, OutcomeDrop, true, false, DropUnknownSenderStrict},
		{"public chat lets the stranger in", EngageInput{Wiring: wiring(EngagePattern, "."), Chat: MessagingGroup{IsGroup: true, UnknownSenderPolicy: PolicyPublic}, Sender: stranger}, OutcomeEngage, true, false, ""},
		{"known scope refuses a stranger in a public chat, without a drop", EngageInput{Wiring: wiring(EngagePattern, ".", knownOnly), Chat: MessagingGroup{IsGroup: true, UnknownSenderPolicy: PolicyPublic}, Sender: stranger}, OutcomeDrop, true, false, ""},
		{"request_approval chat", EngageInput{Wiring: wiring(EngageMention, ""), Chat: MessagingGroup{UnknownSenderPolicy: PolicyRequestApproval}, IsMention: true, Sender: stranger}, OutcomeDrop, true, false, DropUnknownSenderRequestApprove},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := DecideEngage(c.in)
			if d.Outcome != c.outcome || d.Engaged != c.engaged {
				t.Fatalf("DecideEngage = %s engaged=%v, want %s engaged=%v (%+v)", d.Outcome, d.Engaged, c.outcome, c.engaged, d)
			}
			if (d.PatternErr != nil) != c.patternErr {
				t.Errorf("PatternErr = %v, want error: %v", d.PatternErr, c.patternErr)
			}
			if d.PatternErr != nil && (ErrorCode(d.PatternErr) != EINVALID || !strings.Contains(d.PatternErr.Error(), "engage_pattern")) {
				t.Errorf("PatternErr = %v, want invalid naming engage_pattern", d.PatternErr)
			}
			written := c.engaged || c.in.Wiring.IgnoredMessagePolicy == IgnoredAccumulate
			if written != (d.Gate != nil) || written != (d.Scope != nil) {
				t.Errorf("gates ran = %v/%v, want %v: for every message that would be written (engaged or context)", d.Gate != nil, d.Scope != nil, written)
			}
			var drop DropReason
			if d.Gate != nil {
				drop = d.Gate.Drop
			}
			if drop != c.drop {
				t.Errorf("gate drop = %q, want %q", drop, c.drop)
			}
			if d.WiringID != "w" || d.AgentGroupID != "ag" {
				t.Errorf("decision names wiring %q group %q", d.WiringID, d.AgentGroupID)
			}
		})
	}
}

// TestNeedsActiveSession: the registry is asked only for mention-sticky
// wirings, in group chats, without a mention.
func TestNeedsActiveSession(t *testing.T) {
	sticky := Wiring{EngageMode: EngageMentionSticky}
	group, dm := MessagingGroup{IsGroup: true}, MessagingGroup{}
	for _, c := range []struct {
		w       Wiring
		chat    MessagingGroup
		mention bool
		want    bool
	}{
		{sticky, group, false, true},
		{sticky, group, true, false},
		{sticky, dm, false, false},
		{Wiring{EngageMode: EngageMention}, group, false, false},
		{Wiring{EngageMode: EngagePattern, EngagePattern: "."}, group, false, false},
	} {
		if got := NeedsActiveSession(c.w, c.chat, c.mention); got != c.want {
			t.Errorf("NeedsActiveSession(%s, group=%v, mention=%v) = %v", c.w.EngageMode, c.chat.IsGroup, c.mention, got)
		}
	}
}

// TestSummarizeEvent holds spec A9's [IMP]: one event is one drop, and the
// gate's reason wins over no_agent_engaged.
func TestSummarizeEvent(t *testing.T) {
	gate := func(drop DropReason, ask bool) *GateDecision { return &GateDecision{Drop: drop, RequestApproval: ask} }
	engaged := EngageDecision{AgentGroupID: "a", Outcome: OutcomeEngage, Engaged: true, Gate: &GateDecision{Allowed: true}}
	acc := EngageDecision{AgentGroupID: "b", Outcome: OutcomeAccumulate}
	ignored := EngageDecision{AgentGroupID: "c", Outcome: OutcomeDrop}
	strict := EngageDecision{AgentGroupID: "d", Outcome: OutcomeDrop, Engaged: true, Gate: gate(DropUnknownSenderStrict, false)}
	asks := EngageDecision{AgentGroupID: "e", Outcome: OutcomeDrop, Engaged: true, Gate: gate(DropUnknownSenderRequestApprove, true)}
	asks2 := EngageDecision{AgentGroupID: "f", Outcome: OutcomeDrop, Engaged: true, Gate: gate(DropUnknownSenderRequestApprove, true)}
	ctxRefused := EngageDecision{AgentGroupID: "h", Outcome: OutcomeDrop, Gate: gate(DropUnknownSenderRequestApprove, true), Scope: &GateDecision{Allowed: true}}
	scoped := EngageDecision{AgentGroupID: "g", Outcome: OutcomeDrop, Engaged: true, Gate: &GateDecision{Allowed: true}, Scope: &GateDecision{Reason: "unknown_user_scope"}}
	cases := []struct {
		name string
		ds   []EngageDecision
		want EventSummary
	}{
		{"no wiring", nil, EventSummary{Drop: DropNoAgentWired}},
		{"one engaged", []EngageDecision{engaged, ignored}, EventSummary{Engaged: 1}},
		{"accumulated only is no drop", []EngageDecision{ignored, acc}, EventSummary{Accumulated: 1}},
		{"nothing engaged", []EngageDecision{ignored, ignored}, EventSummary{Drop: DropNoAgentEngaged}},
		{"scope refusal alone is no_agent_engaged", []EngageDecision{scoped}, EventSummary{Drop: DropNoAgentEngaged}},
		{"the gate's reason wins", []EngageDecision{ignored, strict, ignored}, EventSummary{Drop: DropUnknownSenderStrict, DropAgentGroupID: "d"}},
		{"two refusing gates make one drop, the first", []EngageDecision{asks, strict, asks2}, EventSummary{Drop: DropUnknownSenderRequestApprove, DropAgentGroupID: "e", ApprovalAgentGroupID: "e"}},
		{"an approval is asked even when another wiring answered", []EngageDecision{engaged, asks}, EventSummary{Engaged: 1, ApprovalAgentGroupID: "e"}},
		{"refused context is no_agent_engaged and asks nobody", []EngageDecision{ignored, ctxRefused}, EventSummary{Drop: DropNoAgentEngaged}},
		{"refused context does not hide an engaged refusal", []EngageDecision{ctxRefused, strict}, EventSummary{Drop: DropUnknownSenderStrict, DropAgentGroupID: "d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SummarizeEvent(c.ds); got != c.want {
				t.Errorf("SummarizeEvent = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestSessionModeAndThread: a non-threaded adapter nulls the thread; a
// threaded adapter in a group forces per-thread unless agent-shared.
func TestSessionModeAndThread(t *testing.T) {
	group, dm := MessagingGroup{IsGroup: true}, MessagingGroup{}
	cases := []struct {
		mode     SessionMode
		chat     MessagingGroup
		threaded bool
		want     SessionMode
	}{
		{ModeShared, group, true, ModePerThread},
		{"", group, true, ModePerThread},
		{ModeShared, group, false, ModeShared},
		{ModeShared, dm, true, ModeShared},
		{ModeAgentShared, group, true, ModeAgentShared},
		{"", dm, false, ModeShared},
	}
	for _, c := range cases {
		if got := EffectiveSessionMode(Wiring{SessionMode: c.mode}, c.chat, c.threaded); got != c.want {
			t.Errorf("EffectiveSessionMode(%q, group=%v, threaded=%v) = %s, want %s", c.mode, c.chat.IsGroup, c.threaded, got, c.want)
		}
	}
	if got := EventThread("t1", false); got != "" {
		t.Errorf("EventThread on a non-threaded adapter = %q", got)
	}
	if got := EventThread("t1", true); got != "t1" {
		t.Errorf("EventThread on a threaded adapter = %q", got)
	}
}

// TestSessionLookupKey holds the resolver's lookups of spec A4.
func TestSessionLookupKey(t *testing.T) {
	cases := []struct {
		name string
		l    SessionLookup
		want SessionKey
	}{
		{"shared ignores the thread", SessionLookup{"ag", "mg", "t", ModeShared}, SessionKey{AgentGroupID: "ag", MessagingGroupID: "mg"}},
		{"per-thread keys the thread", SessionLookup{"ag", "mg", "t", ModePerThread}, SessionKey{AgentGroupID: "ag", MessagingGroupID: "mg", ThreadID: "t"}},
		{"per-thread without a thread finds the shared one", SessionLookup{"ag", "mg", "", ModePerThread}, SessionKey{AgentGroupID: "ag", MessagingGroupID: "mg"}},
		{"agent-shared looks at any chat", SessionLookup{"ag", "mg", "t", ModeAgentShared}, SessionKey{AgentGroupID: "ag", MessagingGroupID: "mg", AnyChat: true}},
		{"no chat: always new", SessionLookup{"ag", "", "", ModeShared}, SessionKey{AgentGroupID: "ag", NoLookup: true}},
		{"agent-shared without a chat still looks", SessionLookup{"ag", "", "", ModeAgentShared}, SessionKey{AgentGroupID: "ag", AnyChat: true}},
	}
	for _, c := range cases {
		if got := c.l.Key(); got != c.want {
			t.Errorf("%s: Key() = %+v, want %+v", c.name, got, c.want)
		}
	}
}
