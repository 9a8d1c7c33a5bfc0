package sessiondb

import (
	"encoding/json"
	"net/url"
	"strings"
)

// legacyStructuredPrefix is the marker one Hermes fork writes instead of
// StructuredPrefix; readers take both.
const legacyStructuredPrefix = "\x01json:"

// ContentText returns message content as a person reads it. Plain text is
// returned as it is. Content a newer Hermes stored as JSON
// (StructuredPrefix followed by an OpenAI- or Anthropic-style list of parts)
// becomes the text of its text parts, one per line, with every other part
// named in brackets: "[image: image/png]", "[audio: wav]",
// "[document: application/pdf]", "[file: report.csv]", "[thinking]". Marked
// content that is not valid JSON is returned as it is. The result may hold
// any character the content held: a face that prints it to a terminal
// still escapes it.
func ContentText(content string) string {
	raw, ok := structuredJSON(content)
	if !ok {
		return content
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return content
	}
	var parts []string
	switch x := v.(type) {
	case []any:
		for _, p := range x {
			parts = append(parts, partText(p))
		}
	case map[string]any:
		if _, typed := x["type"]; typed {
			parts = append(parts, partText(x))
		} else {
			parts = append(parts, "[structured content]")
		}
	case string:
		parts = append(parts, x)
	default:
		parts = append(parts, "[structured content]")
	}
	return strings.Join(parts, "\n")
}

// Text is ContentText of m's content; "" when the content is NULL.
func (m *Message) Text() string {
	if m.Content == nil {
		return ""
	}
	return ContentText(*m.Content)
}

// structuredJSON returns the JSON after a structured-content marker.
func structuredJSON(content string) (json.RawMessage, bool) {
	for _, p := range []string{StructuredPrefix, legacyStructuredPrefix} {
		if body, ok := strings.CutPrefix(content, p); ok {
			return json.RawMessage(body), true
		}
	}
	return nil, false
}

// partText renders one part of structured content.
func partText(p any) string {
	switch x := p.(type) {
	case string:
		return x
	case map[string]any:
		typ, _ := x["type"].(string)
		switch typ {
		case "text", "input_text", "output_text":
			if t, ok := x["text"].(string); ok {
				return t
			}
		case "image_url":
			return named("image", mediaOf(x["image_url"]))
		case "image", "input_image":
			return named("image", firstOf(mediaOf(x["source"]), mediaOf(x["image_url"])))
		case "document":
			return named("document", firstOf(str(x, "title"), str(x, "name"), mediaOf(x["source"])))
		case "file", "input_file":
			name := str(x, "filename")
			if f, ok := x["file"].(map[string]any); ok {
				name = firstOf(name, str(f, "filename"))
			}
			return named("file", name)
		case "input_audio", "audio":
			format := ""
			if a, ok := x["input_audio"].(map[string]any); ok {
				format = str(a, "format")
			}
			return named("audio", firstOf(format, str(x, "format")))
		case "tool_use", "tool_result":
			return named(typ, str(x, "name"))
		case "":
			return "[part]"
		}
		return named(typ, "")
	}
	return "[part]"
}

// mediaOf names what an image or document source points at: the media
// type of inline data, else the address of a remote file without its
// query (signed URLs carry credentials there).
func mediaOf(v any) string {
	switch x := v.(type) {
	case string:
		return urlName(x)
	case map[string]any:
		return firstOf(str(x, "media_type"), str(x, "mime_type"), urlName(str(x, "url")))
	}
	return ""
}

func urlName(s string) string {
	if rest, ok := strings.CutPrefix(s, "data:"); ok {
		mt, _, _ := strings.Cut(rest, ",")
		mt, _, _ = strings.Cut(mt, ";")
		return mt
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

func named(kind, detail string) string {
	if detail == "" {
		return "[" + kind + "]"
	}
	if r := []rune(detail); len(r) > 120 {
		detail = string(r[:120]) + "…"
	}
	return "[" + kind + ": " + detail + "]"
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// DecodeContent is stored content as Hermes' _decode_content reads it:
// text a newer Hermes stored as JSON (StructuredPrefix) as that JSON,
// exactly (a multimodal message's list of parts); anything else, marked
// text that is not JSON included, as it is.
func DecodeContent(content string) any {
	if body, ok := strings.CutPrefix(content, StructuredPrefix); ok && json.Valid([]byte(body)) {
		return json.RawMessage(body)
	}
	return content
}

// NeighbourText is how Hermes' search shows a hit's neighbour (its
// context rows): multimodal content as its text parts joined by spaces,
// or "[multimodal content]" when it has none, other JSON content as "",
// text as it is; then at most 200 code points.
func NeighbourText(content string) string {
	var text string
	switch c := DecodeContent(content).(type) {
	case string:
		text = c
	case json.RawMessage:
		var v any
		_ = json.Unmarshal(c, &v)
		switch x := v.(type) {
		case string:
			text = x
		case []any:
			var parts []string
			for _, p := range x {
				if m, ok := p.(map[string]any); ok && m["type"] == "text" {
					if t, _ := m["text"].(string); t != "" {
						parts = append(parts, t)
					}
				}
			}
			if text = PyStrip(strings.Join(parts, " ")); text == "" {
				text = "[multimodal content]"
			}
		}
	}
	return FirstRunes(text, 200)
}

// FirstRunes is s cut to its first n code points (Python's s[:n]).
func FirstRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
