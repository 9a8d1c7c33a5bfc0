package mailbox

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// object is a JSON object that keeps its keys' order, so rewriting one key
// (attachments, prompt) leaves the rest of the content as the writer made it.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

// parseObject decodes a JSON object. Anything else (array, scalar, trailing
// data, duplicate keys) is an invalid error naming field.
func parseObject(field string, raw []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	bad := func(why string, args ...any) error {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s: %s", field, fmt.Sprintf(why, args...))
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, bad("not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, bad("must be a JSON object")
	}
	o := &object{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad("not JSON: %v", err)
		}
		k, ok := tok.(string)
		if !ok {
			return nil, bad("object key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, bad("value of %q: %v", errtext.Clip(k, 40), err)
		}
		if _, dup := o.vals[k]; dup {
			return nil, bad("duplicate key %q", errtext.Clip(k, 40))
		}
		o.keys = append(o.keys, k)
		o.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, bad("not JSON: %v", err)
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return nil, bad("trailing data after the object")
	}
	return o, nil
}

func (o *object) get(k string) (json.RawMessage, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, kk := range o.keys {
		if kk == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *object) str(k string) string {
	v, ok := o.vals[k]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// marshal renders the object compact, keys in order.
func (o *object) marshal() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshalCompact(k))
		b.WriteByte(':')
		var c bytes.Buffer
		if json.Compact(&c, o.vals[k]) == nil {
			b.Write(c.Bytes())
		} else {
			b.Write(o.vals[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// marshalCompact encodes v as compact JSON without HTML escaping (the form
// JavaScript's JSON.stringify gives, which NanoClaw's readers match
// textually).
func marshalCompact(v any) json.RawMessage {
	b, err := encodeCompact(v)
	if err != nil {
		// Only unsupported types (channels, funcs) fail; callers pass
		// plain data.
		panic(fmt.Sprintf("mailbox: marshal %T: %v", v, err))
	}
	return b
}

func encodeCompact(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// MarshalContent encodes v as compact JSON without HTML escaping, the form
// the mailbox files store. v must encode to a JSON object.
func MarshalContent(v any) (json.RawMessage, error) {
	b, err := encodeCompact(v)
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "content: %v", err)
	}
	return normalizeContent("content", b)
}

// normalizeContent checks raw is one JSON object and returns it compact.
func normalizeContent(field string, raw []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s is empty", field)
	}
	if _, err := parseObject(field, raw); err != nil {
		return nil, err
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s: %v", field, err)
	}
	return c.Bytes(), nil
}

// Content is the decoded view of a content JSON object: the fields the host
// and agent act on, whatever the kind. Unknown keys are kept in Raw.
type Content struct {
	Text        string
	Markdown    string
	Sender      string
	SenderID    string
	Operation   string // edit | reaction
	MessageID   string // edit/reaction target
	Emoji       string
	Type        string // ask_question, card, question_response, cli_response
	QuestionID  string
	RequestID   string
	Action      string // kind='system' actions
	Files       []string
	Attachments []Attachment
	Raw         map[string]json.RawMessage
}

// Attachment is one entry of a chat message's attachments.
type Attachment struct {
	Type      string `json:"type,omitempty"`
	Name      string `json:"name,omitempty"`
	Filename  string `json:"filename,omitempty"`
	MimeType  string `json:"mimeType,omitempty"`
	Size      int64  `json:"size,omitempty"`
	URL       string `json:"url,omitempty"`
	Data      string `json:"data,omitempty"`
	LocalPath string `json:"localPath,omitempty"`
}

// DecodeContent decodes a content JSON object. Fields with an unexpected
// type are an invalid error naming the field; the input is never trusted to
// be well formed.
func DecodeContent(raw []byte) (Content, error) {
	o, err := parseObject("content", raw)
	if err != nil {
		return Content{}, err
	}
	c := Content{Raw: o.vals}
	strs := map[string]*string{
		"text": &c.Text, "markdown": &c.Markdown, "sender": &c.Sender, "senderId": &c.SenderID,
		"operation": &c.Operation, "messageId": &c.MessageID, "emoji": &c.Emoji, "type": &c.Type,
		"questionId": &c.QuestionID, "requestId": &c.RequestID, "action": &c.Action,
	}
	for k, dst := range strs {
		v, ok := o.vals[k]
		if !ok || string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return Content{}, sessiondb.Errorf(sessiondb.EINVALID, "content.%s: want a string", k)
		}
	}
	if v, ok := o.vals["files"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &c.Files); err != nil {
			return Content{}, sessiondb.Errorf(sessiondb.EINVALID, "content.files: want an array of file names")
		}
	}
	if v, ok := o.vals["attachments"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &c.Attachments); err != nil {
			return Content{}, sessiondb.Errorf(sessiondb.EINVALID, "content.attachments: %v", err)
		}
	}
	return c, nil
}

// notification is the host notification shape.
func notification(text string) json.RawMessage {
	o := &object{vals: map[string]json.RawMessage{}}
	o.set("text", marshalCompact(text))
	o.set("sender", marshalCompact("system"))
	o.set("senderId", marshalCompact("system"))
	return o.marshal()
}
