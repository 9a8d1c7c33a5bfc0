package mailbox

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/sessiondb/sessiondb"
)

// QuestionResponse builds the kind='system' row that answers an agent's
// ask_question card: id qr-<questionID>-<ms>, content
// {"type":"question_response","questionId",…,"selectedOption",…,"userId",…}
// (compact: the agent's waiter matches "questionId":"<id>" textually).
// routing should be the pending question's.
func QuestionResponse(questionID, selectedOption, userID string, routing Routing, now time.Time) (InboundMessage, error) {
	if questionID == "" {
		return InboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "question id is empty")
	}
	o := &object{vals: map[string]json.RawMessage{}}
	o.set("type", marshalCompact("question_response"))
	o.set("questionId", marshalCompact(questionID))
	o.set("selectedOption", marshalCompact(selectedOption))
	o.set("userId", marshalCompact(userID))
	m := InboundMessage{ID: "qr-" + questionID + "-" + strconv.FormatInt(now.UnixMilli(), 10), Kind: KindSystem,
		Content: o.marshal(), Routing: routing, Timestamp: now}
	return m, ValidateName("question response id", m.ID)
}

// CLIResponse builds the kind='system', trigger=0 row answering an agent's
// cli_request: id cli-resp-<requestID>, content
// {"type":"cli_response","requestId":…,"frame":…}. frame must be JSON.
func CLIResponse(requestID string, frame json.RawMessage) (InboundMessage, error) {
	if requestID == "" {
		return InboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "request id is empty")
	}
	if len(frame) == 0 {
		frame = json.RawMessage("null")
	}
	if !json.Valid(frame) {
		return InboundMessage{}, sessiondb.Errorf(sessiondb.EINVALID, "cli response frame is not JSON")
	}
	o := &object{vals: map[string]json.RawMessage{}}
	o.set("type", marshalCompact("cli_response"))
	o.set("requestId", marshalCompact(requestID))
	o.set("frame", frame)
	m := InboundMessage{ID: "cli-resp-" + requestID, Kind: KindSystem, Content: o.marshal(), ContextOnly: true}
	return m, ValidateName("cli response id", m.ID)
}

// Notification builds a host notification to the agent of agentGroupID:
// kind='chat', channel_type 'agent', platform_id = the group, content
// {"text",…,"sender":"system","senderId":"system"}, id msg-<ms>-<rand6>.
// Set ContextOnly or OnWake on the result as needed (a restart note uses
// OnWake).
func Notification(agentGroupID, text string, now time.Time) InboundMessage {
	return InboundMessage{ID: NewID("msg", now), Kind: KindChat, Content: notification(text), Timestamp: now,
		Routing: Routing{ChannelType: ChannelAgent, PlatformID: agentGroupID}}
}
