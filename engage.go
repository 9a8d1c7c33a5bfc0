package sessiondb

import "regexp"

// Outcome is what one wiring does with one inbound message.
type Outcome string

const (
	// OutcomeEngage writes the message with trigger 1 and wakes the agent.
	OutcomeEngage Outcome = "engage"
	// OutcomeAccumulate writes it with trigger 0: context, no wake.
	OutcomeAccumulate Outcome = "accumulate"
	// OutcomeDrop does not write it for this wiring.
	OutcomeDrop Outcome = "drop"
)

// EngageInput is what the per-wiring decision reads about one message.
type EngageInput struct {
	Wiring Wiring
	// Chat is the wiring's messaging group (its policy and is_group).
	Chat MessagingGroup
	// Text is the message text the pattern is tested against.
	Text string
	// IsMention says the bot was mentioned (a DM counts as one).
	IsMention bool
	// ActiveSession says the agent group already has an active session for
	// (chat, thread); read only when NeedsActiveSession says so.
	ActiveSession bool
	// Sender is what the registry knows about the sender; UserID empty
	// when the sender could not be identified.
	Sender UserAccess
}

// EngageDecision is the outcome for one wiring, with how it was reached.
type EngageDecision struct {
	WiringID     string  `json:"wiring_id"`
	AgentGroupID string  `json:"agent_group_id"`
	Outcome      Outcome `json:"outcome"`
	// Engaged says the wiring's engage rule matched.
	Engaged bool `json:"engaged"`
	// Gate and Scope are the two gates' verdicts; set when the message
	// would be written: engaged, or not engaged under accumulate (a
	// sender the gates refuse puts no text into the agent's context).
	Gate  *GateDecision `json:"gate,omitempty"`
	Scope *GateDecision `json:"scope,omitempty"`
	// PatternErr is set when the wiring's pattern does not compile under
	// Go's RE2 (JavaScript-only syntax included); the wiring then engaged,
	// failing open as spec A4 says, and the router reports the error.
	PatternErr error `json:"-"`
}

// NeedsActiveSession reports whether DecideEngage will read
// EngageInput.ActiveSession for w: mention-sticky, no mention, group chat.
// The router asks the registry only then.
func NeedsActiveSession(w Wiring, chat MessagingGroup, isMention bool) bool {
	return w.WithDefaults().EngageMode == EngageMentionSticky && !isMention && chat.IsGroup
}

// MatchEngagePattern reports whether pattern engages on text: '.' and ""
// always do (even on empty text, without running a regular expression);
// else the pattern is searched for in text, case-sensitively and
// unanchored, as JavaScript's RegExp.test without flags. A pattern Go's
// RE2 cannot compile matches (fail open) and its error is returned.
func MatchEngagePattern(pattern, text string) (bool, error) {
	if pattern == "" || pattern == MatchEverything {
		return true, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return true, Errorf(EINVALID, "engage_pattern %q does not compile as a Go (RE2) regular expression, so the wiring engages on every message: %v", clip(pattern), err)
	}
	return re.MatchString(text), nil
}

// DecideEngage decides what one wiring does with one message (spec A4,
// A5, A9):
//
//   - the engage rule: pattern (MatchEngagePattern), mention, or
//     mention-sticky (mention, or in a group chat an active session for
//     the chat and thread);
//   - engaged: the access gate (AccessGate with the chat's policy) and the
//     sender-scope gate (SenderScopeGate) both run; both allowed →
//     engage, else drop (an engaged message that was refused is not kept
//     as context either);
//   - not engaged: accumulate under ignored_message_policy accumulate,
//     else drop. Deliberately unlike NanoClaw, which keeps context without
//     asking the gates: context is text the agent reads, so a sender the
//     gates would refuse could otherwise steer the agent (prompt
//     injection) without ever addressing it. The gates run for context
//     too and a refusal drops it; only an engaged refusal asks an approver
//     or names the drop (SummarizeEvent), since the sender did not address
//     the agent.
func DecideEngage(in EngageInput) EngageDecision {
	w := in.Wiring.WithDefaults()
	d := EngageDecision{WiringID: w.ID, AgentGroupID: w.AgentGroupID}
	switch w.EngageMode {
	case EngagePattern:
		d.Engaged, d.PatternErr = MatchEngagePattern(w.EngagePattern, in.Text)
	case EngageMention:
		d.Engaged = in.IsMention
	case EngageMentionSticky:
		d.Engaged = in.IsMention || (in.Chat.IsGroup && in.ActiveSession)
	}
	d.Outcome = OutcomeDrop
	if !d.Engaged && w.IgnoredMessagePolicy != IgnoredAccumulate {
		return d
	}
	gate := AccessGate(in.Chat.UnknownSenderPolicy, in.Sender, w.AgentGroupID)
	scope := SenderScopeGate(w.SenderScope, in.Sender, w.AgentGroupID)
	d.Gate, d.Scope = &gate, &scope
	if gate.Allowed && scope.Allowed {
		d.Outcome = OutcomeEngage
		if !d.Engaged {
			d.Outcome = OutcomeAccumulate
		}
	}
	return d
}

// EventSummary is what one inbound event came to across its wirings.
type EventSummary struct {
	// Engaged and Accumulated count the wirings that wrote the message.
	Engaged     int `json:"engaged"`
	Accumulated int `json:"accumulated"`
	// Drop is the one audit record the event makes (spec A9 [IMP]: one
	// event, one drop), empty when some wiring wrote the message.
	Drop DropReason `json:"drop,omitempty"`
	// DropAgentGroupID is the agent group whose gate decided the drop;
	// empty for no_agent_engaged and no_agent_wired.
	DropAgentGroupID string `json:"drop_agent_group_id,omitempty"`
	// ApprovalAgentGroupID is the agent group to ask an approver about the
	// sender for (the first wiring, in evaluation order, whose gate asked
	// for it); empty when none did.
	ApprovalAgentGroupID string `json:"approval_agent_group_id,omitempty"`
}

// SummarizeEvent folds the decisions of one event's wirings, given in
// evaluation order (priority, highest first). With no decisions at all the
// chat has no wiring: drop no_agent_wired. When no wiring wrote the
// message, the drop reason is the first engaged wiring's access-gate refusal if any (the
// gate's reason wins over no_agent_engaged), else no_agent_engaged. An
// approval request is reported even when another wiring took the message.
func SummarizeEvent(ds []EngageDecision) EventSummary {
	var s EventSummary
	if len(ds) == 0 {
		s.Drop = DropNoAgentWired
		return s
	}
	var gateDrop *EngageDecision
	for i := range ds {
		d := &ds[i]
		switch d.Outcome {
		case OutcomeEngage:
			s.Engaged++
		case OutcomeAccumulate:
			s.Accumulated++
		}
		if !d.Engaged || d.Gate == nil {
			// Context a gate refused is no_agent_engaged and asks nobody:
			// the sender did not address the agent.
			continue
		}
		if d.Gate.Drop != "" && gateDrop == nil {
			gateDrop = d
		}
		if d.Gate.RequestApproval && s.ApprovalAgentGroupID == "" {
			s.ApprovalAgentGroupID = d.AgentGroupID
		}
	}
	if s.Engaged+s.Accumulated > 0 {
		return s
	}
	if gateDrop != nil {
		s.Drop, s.DropAgentGroupID = gateDrop.Gate.Drop, gateDrop.AgentGroupID
		return s
	}
	s.Drop = DropNoAgentEngaged
	return s
}

// EventThread is the thread an event is routed with: a non-threaded
// adapter nulls it (spec A4).
func EventThread(threadID string, threadedAdapter bool) string {
	if !threadedAdapter {
		return ""
	}
	return threadID
}

// EffectiveSessionMode is the session mode a wiring resolves with for one
// event (spec A4): a threaded adapter in a group chat forces per-thread
// unless the wiring is agent-shared.
func EffectiveSessionMode(w Wiring, chat MessagingGroup, threadedAdapter bool) SessionMode {
	mode := w.WithDefaults().SessionMode
	if threadedAdapter && chat.IsGroup && mode != ModeAgentShared {
		return ModePerThread
	}
	return mode
}
