package optuna

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// pyJSON writes JSON as Python's json.dumps does by default: ", " and
// ": " separators, non-ASCII characters escaped, floats always with a
// decimal point or an exponent, and NaN, Infinity and -Infinity as bare
// tokens.
type pyJSON struct {
	buf      bytes.Buffer
	first    []bool // per open object or list: no member written yet
	afterKey bool   // a key was written: its value comes next
	compact  bool   // "," and ":" separators, without spaces
	err      error
}

func (b *pyJSON) take() []byte {
	out := bytes.Clone(b.buf.Bytes())
	b.buf.Reset()
	return out
}

// begin starts a value: after its key, or after a separator in a list.
func (b *pyJSON) begin() {
	if b.afterKey {
		b.afterKey = false
		return
	}
	if n := len(b.first); n > 0 {
		if !b.first[n-1] {
			b.buf.WriteString(b.separator(", "))
		}
		b.first[n-1] = false
	}
}

// separator returns sep (", " or ": "), without its space in compact mode.
func (b *pyJSON) separator(sep string) string {
	if b.compact {
		return sep[:1]
	}
	return sep
}

// object writes an object whose members members writes with field and key.
func (b *pyJSON) object(members func()) {
	b.begin()
	b.rawObject(members)
}

func (b *pyJSON) rawObject(members func()) {
	b.buf.WriteByte('{')
	b.first = append(b.first, true)
	members()
	b.first = b.first[:len(b.first)-1]
	b.buf.WriteByte('}')
}

// key writes the key of the member whose value comes next.
func (b *pyJSON) key(k string) {
	b.begin()
	b.str(k)
	b.buf.WriteString(b.separator(": "))
	b.afterKey = true
}

func (b *pyJSON) field(k string, v any) {
	b.key(k)
	b.value(v)
}

func (b *pyJSON) str(s string) {
	b.buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.buf.WriteString(`\"`)
		case r == '\\':
			b.buf.WriteString(`\\`)
		case r == '\n':
			b.buf.WriteString(`\n`)
		case r == '\r':
			b.buf.WriteString(`\r`)
		case r == '\t':
			b.buf.WriteString(`\t`)
		case r < 0x20 || r > 0x7f:
			if r > 0xffff {
				r1, r2 := utf16Surrogates(r)
				fmt.Fprintf(&b.buf, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b.buf, `\u%04x`, r)
			}
		default:
			b.buf.WriteRune(r)
		}
	}
	b.buf.WriteByte('"')
}

func utf16Surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// pyFloat formats x as Python's json writes a float.
func pyFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func (b *pyJSON) value(v any) {
	b.begin()
	switch v := v.(type) {
	case nil:
		b.buf.WriteString("null")
	case bool:
		b.buf.WriteString(strconv.FormatBool(v))
	case string:
		b.str(v)
	case json.Number:
		b.buf.WriteString(v.String())
	case float64:
		b.buf.WriteString(pyFloat(v))
	case float32:
		b.buf.WriteString(pyFloat(float64(v)))
	case int:
		b.buf.WriteString(strconv.Itoa(v))
	case int64:
		b.buf.WriteString(strconv.FormatInt(v, 10))
	case []any:
		b.buf.WriteByte('[')
		b.first = append(b.first, true)
		for _, e := range v {
			b.value(e)
		}
		b.first = b.first[:len(b.first)-1]
		b.buf.WriteByte(']')
	case map[string]any:
		b.rawObject(func() {
			for _, k := range slices.Sorted(maps.Keys(v)) {
				b.field(k, v[k])
			}
		})
	default:
		if b.err == nil {
			b.err = fmt.Errorf("value %v of type %T has no JSON form here", v, v)
		}
		b.buf.WriteString("null")
	}
}

// ---- import
