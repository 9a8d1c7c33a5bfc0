package sessiondb

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// checkField fails unless err is nil (field "") or an invalid error naming
// field.
func checkField(t *testing.T, name string, err error, field string) {
	t.Helper()
	switch {
	case field == "" && err != nil:
		t.Errorf("%s: refused: %v", name, err)
	case field != "" && err == nil:
		t.Errorf("%s: accepted, want invalid naming %s", name, field)
	case field != "" && (ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), field)):
		t.Errorf("%s: %v (code %s), want invalid naming %s", name, err, ErrorCode(err), field)
	}
}

// TestRegistryValidate holds the registry's inputs to their rules: each
// refusal is invalid and names the field.
func TestRegistryValidate(t *testing.T) {
	sp := func(s string) *string { return &s }
	pattern := EngagePattern
	cases := []struct {
		name  string
		v     interface{ Validate() error }
		field string
	}{
		{"agent group", NewAgentGroup{Name: "Main", Folder: "main"}, ""},
		{"agent group folder with a separator", NewAgentGroup{Name: "x", Folder: "../etc"}, "folder"},
		{"agent group folder ..", NewAgentGroup{Name: "x", Folder: ".."}, "folder"},
		{"agent group folder with NUL", NewAgentGroup{Name: "x", Folder: "a\x00b"}, "folder"},
		{"agent group folder with a newline", NewAgentGroup{Name: "x", Folder: "a\nb"}, "folder"},
		{"agent group without folder", NewAgentGroup{Name: "x"}, "folder"},
		{"agent group with a hostile id", NewAgentGroup{ID: "a/b", Name: "x", Folder: "x"}, "id"},
		{"agent group without name", NewAgentGroup{Folder: "x"}, "name"},
		{"agent group rename to empty", AgentGroupUpdate{Name: sp("")}, "name"},

		{"chat", NewMessagingGroup{ChannelType: "telegram", PlatformID: "-100"}, ""},
		{"chat with a capitalized channel", NewMessagingGroup{ChannelType: "Telegram", PlatformID: "1"}, "channel_type"},
		{"chat without platform id", NewMessagingGroup{ChannelType: "telegram"}, "platform_id"},
		{"chat with a bad policy", NewMessagingGroup{ChannelType: "telegram", PlatformID: "1", UnknownSenderPolicy: "open"}, "unknown_sender_policy"},

		{"wiring", NewWiring{MessagingGroupID: "mg", AgentGroupID: "ag"}, ""},
		{"wiring with a pattern", NewWiring{MessagingGroupID: "mg", AgentGroupID: "ag", EngageMode: EngagePattern, EngagePattern: `^!bot\b`}, ""},
		{"wiring with a JavaScript-only pattern", NewWiring{MessagingGroupID: "mg", AgentGroupID: "ag", EngageMode: EngagePattern, EngagePattern: `(?<!x)y`}, "engage_pattern"},
		{"wiring with a pattern but mention mode", NewWiring{MessagingGroupID: "mg", AgentGroupID: "ag", EngagePattern: "x"}, "engage_pattern"},
		{"wiring with a bad mode", NewWiring{MessagingGroupID: "mg", AgentGroupID: "ag", EngageMode: "always"}, "engage_mode"},
		{"wiring with a bad scope", NewWiring{MessagingGroupID: "mg", AgentGroupID: "ag", SenderScope: "some"}, "sender_scope"},
		{"wiring with a bad policy", NewWiring{MessagingGroupID: "mg", AgentGroupID: "ag", IgnoredMessagePolicy: "keep"}, "ignored_message_policy"},
		{"wiring with a bad session mode", NewWiring{MessagingGroupID: "mg", AgentGroupID: "ag", SessionMode: "thread"}, "session_mode"},
		{"wiring without chat", NewWiring{AgentGroupID: "ag"}, "messaging_group_id"},
		{"wiring without group", NewWiring{MessagingGroupID: "mg", EngageMode: pattern}, "agent_group_id"},

		{"user", NewUser{ID: "tg:123", DisplayName: "Ann"}, ""},
		{"teams user", NewUser{ID: "29:1abc", Kind: "teams"}, ""},
		{"user without namespace", NewUser{ID: "123"}, "id"},
		{"user with an empty handle", NewUser{ID: "tg:"}, "id"},
		{"user with a bad kind", NewUser{ID: "tg:1", Kind: "T G"}, "kind"},

		{"global owner", NewRoleGrant{UserID: "tg:1", Role: RoleOwner}, ""},
		{"scoped admin", NewRoleGrant{UserID: "tg:1", Role: RoleAdmin, AgentGroupID: "ag"}, ""},
		{"scoped owner", NewRoleGrant{UserID: "tg:1", Role: RoleOwner, AgentGroupID: "ag"}, "agent_group_id"},
		{"unknown role", NewRoleGrant{UserID: "tg:1", Role: "root"}, "role"},
		{"grant by a non-user", NewRoleGrant{UserID: "tg:1", Role: RoleAdmin, GrantedBy: "cli"}, "granted_by"},

		{"destination", NewDestination{AgentGroupID: "ag", LocalName: "family", TargetType: TargetChannel, TargetID: "mg"}, ""},
		{"destination with a padded name", NewDestination{AgentGroupID: "ag", LocalName: " family", TargetType: TargetChannel, TargetID: "mg"}, "local_name"},
		{"destination with a bad type", NewDestination{AgentGroupID: "ag", LocalName: "x", TargetType: "user", TargetID: "mg"}, "target_type"},
		{"destination without target", NewDestination{AgentGroupID: "ag", LocalName: "x", TargetType: TargetAgent}, "target_id"},

		{"lookup", SessionLookup{AgentGroupID: "ag", Mode: ModeShared}, ""},
		{"lookup without mode", SessionLookup{AgentGroupID: "ag"}, "session_mode"},
		{"lookup with a hostile group", SessionLookup{AgentGroupID: "..", Mode: ModeShared}, "agent_group_id"},
		{"session filter", AgentSessionFilter{Status: "open"}, "status"},
		{"session filter limit", AgentSessionFilter{Limit: -1}, "limit"},

		{"question", NewQuestion{QuestionID: "msg-1", SessionID: "s", Title: "Pick", Options: []QuestionOption{{Label: "a", SelectedLabel: "a", Value: "a"}}}, ""},
		{"question without options", NewQuestion{QuestionID: "msg-1", SessionID: "s", Title: "Pick"}, "options"},
		{"question without title", NewQuestion{QuestionID: "msg-1", SessionID: "s", Options: ApproveRejectOptions}, "title"},
		{"approval", NewApproval{SessionID: "s", Action: "install_packages", Payload: json.RawMessage(`{"apt":["jq"]}`), Title: "Install"}, ""},
		{"approval with bad payload", NewApproval{SessionID: "s", Action: "x", Payload: json.RawMessage(`{`), Title: "t"}, "payload"},
		{"approval without session", NewApproval{Action: "x", Payload: json.RawMessage(`{}`), Title: "t"}, "session_id"},
		{"credential approval without session", NewApproval{Action: ActionCredential, Payload: json.RawMessage(`{}`), Title: "t"}, ""},
		{"sender approval", NewSenderApproval{MessagingGroupID: "mg", AgentGroupID: "ag", SenderIdentity: "tg:9", OriginalMessage: json.RawMessage(`{}`), ApproverUserID: "tg:1", Title: "t"}, ""},
		{"sender approval with a raw sender", NewSenderApproval{MessagingGroupID: "mg", AgentGroupID: "ag", SenderIdentity: "9", OriginalMessage: json.RawMessage(`{}`), ApproverUserID: "tg:1", Title: "t"}, "sender_identity"},
		{"approval filter", ApprovalFilter{Status: "done"}, "status"},
		{"dropped", DroppedMessage{ChannelType: "telegram", PlatformID: "1", Reason: DropNoAgentWired}, ""},
		{"dropped with an unknown reason", DroppedMessage{ChannelType: "telegram", PlatformID: "1", Reason: "spam"}, "reason"},
		{"dm", NewUserDM{UserID: "tg:1", ChannelType: "telegram", PlatformID: "1"}, ""},
		{"dm without platform", NewUserDM{UserID: "tg:1", ChannelType: "telegram"}, "platform_id"},
		{"subagent filter", SubagentFilter{Status: "completed"}, "status"},
	}
	for _, c := range cases {
		checkField(t, c.name, c.v.Validate(), c.field)
	}
}

// TestWiringDefaults: NULL engage columns read as the spec says, and a
// new pattern wiring without a pattern stores '.'.
func TestWiringDefaults(t *testing.T) {
	w := Wiring{}.WithDefaults()
	if w.EngageMode != EngageMention || w.SenderScope != ScopeAll || w.IgnoredMessagePolicy != IgnoredDrop || w.SessionMode != ModeShared {
		t.Errorf("NULL columns read as %+v", w)
	}
	n := NewWiring{EngageMode: EngagePattern}.Normalized()
	if n.EngagePattern != "." || n.SenderScope != ScopeAll || n.SessionMode != ModeShared {
		t.Errorf("Normalized = %+v", n)
	}
	mention := EngageMention
	got, err := WiringUpdate{EngageMode: &mention}.Apply(Wiring{EngageMode: EngagePattern, EngagePattern: "x", Priority: 3})
	if err != nil || got.EngagePattern != "" || got.EngageMode != EngageMention || got.Priority != 3 {
		t.Errorf("switching to mention = %+v, %v; want the pattern cleared", got, err)
	}
	bad := "(?=x)"
	pat := EngagePattern
	_, err = WiringUpdate{EngageMode: &pat, EngagePattern: &bad}.Apply(Wiring{})
	checkField(t, "update to a JavaScript-only pattern", err, "engage_pattern")
}

func TestNormalizeOptions(t *testing.T) {
	got, err := NormalizeOptions(json.RawMessage(`["Yes", {"label":"No"}, {"label":"Later","selectedLabel":"⏰ Later","value":"later"}, {"label":"x","value":"y"}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []QuestionOption{
		{"Yes", "Yes", "Yes"},
		{"No", "No", "No"},
		{"Later", "⏰ Later", "later"},
		{"x", "x", "y"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NormalizeOptions = %+v, want %+v", got, want)
	}
	for _, bad := range []string{`{}`, `[1]`, `[{"value":"v"}]`, `not json`} {
		if _, err := NormalizeOptions(json.RawMessage(bad)); ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "options") {
			t.Errorf("NormalizeOptions(%s) = %v, want invalid naming options", bad, err)
		}
	}
	q := PendingQuestion{CreatedAt: t0}
	if q.Expired(t0.Add(QuestionTTL-time.Millisecond), QuestionTTL) || !q.Expired(t0.Add(QuestionTTL), QuestionTTL) {
		t.Errorf("a question expires exactly QuestionTTL after it was created")
	}
}

func TestTimestampsAndIDs(t *testing.T) {
	at := time.Date(2026, 5, 18, 10, 0, 0, 123456789, time.FixedZone("X", 3600))
	if got := FormatTimestamp(at); got != "2026-05-18T09:00:00.123Z" {
		t.Errorf("FormatTimestamp = %q", got)
	}
	for in, want := range map[string]time.Time{
		"2026-05-18T09:00:00.123Z":  time.Date(2026, 5, 18, 9, 0, 0, 123e6, time.UTC),
		"2026-05-18 09:00:00":       time.Date(2026, 5, 18, 9, 0, 0, 0, time.UTC),
		"2026-05-18T11:00:00+02:00": time.Date(2026, 5, 18, 9, 0, 0, 0, time.UTC),
	} {
		if got, ok := ParseTimestamp(in); !ok || !got.Equal(want) {
			t.Errorf("ParseTimestamp(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if _, ok := ParseTimestamp("yesterday"); ok {
		t.Errorf("ParseTimestamp accepted yesterday")
	}
	id := NewID("sess", time.UnixMilli(1747562400000))
	if !strings.HasPrefix(id, "sess-1747562400000-") || len(id) != len("sess-1747562400000-")+6 {
		t.Errorf("NewID = %q", id)
	}
	for _, r := range id[len(id)-6:] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z') {
			t.Errorf("NewID %q: %q is not base 36", id, r)
		}
	}
}

func TestFirstErrorKeepsTheOrderOfTheChecks(t *testing.T) {
	a, b := Errorf(EINVALID, "a is empty"), Errorf(EINVALID, "b is empty")
	for _, tc := range []struct {
		errs []error
		want error
	}{
		{nil, nil},
		{[]error{nil, nil}, nil},
		{[]error{nil, a, b}, a},
		{[]error{b, a}, b},
		{[]error{nil, nil, b}, b},
	} {
		if got := firstError(tc.errs...); got != tc.want {
			t.Errorf("firstError(%v) = %v, want %v", tc.errs, got, tc.want)
		}
	}
}

func TestUnlessEmptySkipsTheCheckOfAnEmptyWord(t *testing.T) {
	refuse := func() error { return Errorf(EINVALID, "refused") }
	if err := unlessEmpty(SubagentStatus(""), refuse); err != nil {
		t.Errorf("empty word: %v, want the check skipped", err)
	}
	if err := unlessEmpty(SubagentStatus("done"), refuse); ErrorCode(err) != EINVALID {
		t.Errorf("set word: %v, want the check's error", err)
	}
}
