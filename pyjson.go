package sessiondb

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PythonJSON returns the JSON text raw as Python's json.dumps writes the
// value json.loads reads from it, with its default settings: members in
// the order given, ", " and ": " between them, every character outside
// printable ASCII escaped (\uXXXX, a surrogate pair beyond the BMP), an
// integer as its digits, a number with a fraction or an exponent as
// Python's repr of the float. Hermes stores every JSON column and its
// structured content this way, so an import that re-encodes a value with
// it stores the bytes Hermes' own import would. raw that is not JSON is
// invalid.
func PythonJSON(raw []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var out bytes.Buffer
	if err := pyValue(d, &out); err != nil {
		return nil, Errorf(EINVALID, "not JSON: %v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, Errorf(EINVALID, "not JSON: more after the value")
	}
	return out.Bytes(), nil
}

// pyValue writes the next value of d.
func pyValue(d *json.Decoder, out *bytes.Buffer) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		closing, sep := byte(']'), ", "
		if t == '{' {
			closing = '}'
		}
		out.WriteByte(byte(t))
		for first := true; d.More(); first = false {
			if !first {
				out.WriteString(sep)
			}
			if t == '{' {
				k, err := d.Token()
				if err != nil {
					return err
				}
				pyString(out, k.(string))
				out.WriteString(": ")
			}
			if err := pyValue(d, out); err != nil {
				return err
			}
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return err
		}
		out.WriteByte(closing)
	case string:
		pyString(out, t)
	case json.Number:
		out.WriteString(pyNumber(string(t)))
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	}
	return nil
}

// pyString writes s quoted as json.dumps does with ensure_ascii.
func pyString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		case '\b':
			out.WriteString(`\b`)
		case '\f':
			out.WriteString(`\f`)
		default:
			switch {
			case r >= 0x20 && r < 0x7f:
				out.WriteRune(r)
			case r > 0xffff:
				r -= 0x10000
				pyEscape(out, 0xd800+(r>>10))
				pyEscape(out, 0xdc00+(r&0x3ff))
			default:
				pyEscape(out, r)
			}
		}
	}
	out.WriteByte('"')
}

func pyEscape(out *bytes.Buffer, r rune) {
	const hex = "0123456789abcdef"
	out.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		out.WriteByte(hex[(r>>shift)&0xf])
	}
}

// pyNumber is how Python writes the number a JSON number text reads as:
// an int when the text has no fraction or exponent, else a float.
func pyNumber(text string) string {
	if !strings.ContainsAny(text, ".eE") {
		// An int, of any size: its digits, a minus only before a
		// non-zero value.
		neg := strings.HasPrefix(text, "-")
		digits := strings.TrimLeft(strings.TrimPrefix(text, "-"), "0")
		if digits == "" {
			return "0"
		}
		if neg {
			return "-" + digits
		}
		return digits
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) {
		return text
	}
	return PythonFloat(f)
}

// PythonFloat is Python's repr of f: the shortest digits that read back
// as f, written plainly when the decimal point falls within 16 digits of
// the first digit (with ".0" when whole), else as d.ddde±XX.
func PythonFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := x + 1 // the value is 0.digits × 10^decpt
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			return sign + "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			return sign + digits[:decpt] + "." + digits[decpt:]
		}
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if x < 0 {
		es, x = "-", -x
	}
	xs := strconv.Itoa(x)
	if len(xs) < 2 {
		xs = "0" + xs
	}
	return sign + m + "e" + es + xs
}

// pythonJSONValue is PythonJSON of a decoded value: a json.RawMessage
// keeps its members' order; anything else is encoded by encoding/json
// first (maps in key order).
func pythonJSONValue(field string, v any) ([]byte, error) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		b, err := MarshalJSONField(field, v)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	if !utf8.Valid(raw) {
		return nil, Errorf(EINVALID, "%s must be valid UTF-8 JSON", field)
	}
	b, err := PythonJSON(raw)
	if err != nil {
		return nil, Wrap(EINVALID, err, "%s", field)
	}
	return b, nil
}
