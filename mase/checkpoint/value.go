package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/safetensors"
)

// Node arguments, keyword arguments and metadata values are stored in the
// graph JSON with a tagged encoding that keeps their Go types:
//
//	nil, bool, string       null, true/false, "text"
//	int, int64, int32       {"int": 3}, {"int64": 3}, {"int32": 3}
//	float64, float32        {"float": 0.1}, {"float32": 0.1}; {"float": "nan"|"inf"|"-inf"}
//	[]any (a tuple)         {"tuple": [v, ...]}
//	map[string]any          {"dict": {"key": v, ...}}
//	ir.Slice                {"slice": [start, stop, step]} with null for an omitted bound
//	*ir.Node                {"node": "name"}
//
// Finite floats are written in the shortest form that reads back to the
// same bits (-0 included); NaN payloads are not kept.

// valueTypes lists what the encoding holds, for error messages.
const valueTypes = "nil, bool, string, int, int32, int64, float32, float64, []any, map[string]any, ir.Slice, *ir.Node"

// encodeValue returns the tagged JSON of v. nodeOK, when not nil, vets
// every node reference (nil refuses them).
func encodeValue(v any, nodeOK func(*ir.Node) error) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := appendValue(&b, v, nodeOK); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func appendValue(b *bytes.Buffer, v any, nodeOK func(*ir.Node) error) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		s, _ := json.Marshal(x)
		b.Write(s)
	case int:
		fmt.Fprintf(b, `{"int":%d}`, x)
	case int64:
		fmt.Fprintf(b, `{"int64":%d}`, x)
	case int32:
		fmt.Fprintf(b, `{"int32":%d}`, x)
	case float64:
		b.WriteString(`{"float":` + formatFloat(x, 64) + `}`)
	case float32:
		b.WriteString(`{"float32":` + formatFloat(float64(x), 32) + `}`)
	case []any:
		b.WriteString(`{"tuple":[`)
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendValue(b, e, nodeOK); err != nil {
				return fmt.Errorf("[%d]%s", i, errSuffix(err))
			}
		}
		b.WriteString("]}")
	case map[string]any:
		b.WriteString(`{"dict":`)
		if err := appendObject(b, x, nodeOK); err != nil {
			return err
		}
		b.WriteByte('}')
	case ir.Slice:
		b.WriteString(`{"slice":[`)
		for i, p := range []*int{x.Start, x.Stop, x.Step} {
			if i > 0 {
				b.WriteByte(',')
			}
			if p == nil {
				b.WriteString("null")
			} else {
				b.WriteString(strconv.Itoa(*p))
			}
		}
		b.WriteString("]}")
	case *ir.Node:
		if x == nil {
			return fmt.Errorf("nil *ir.Node")
		}
		if nodeOK == nil {
			return fmt.Errorf("node reference %%%s is not allowed here", x.Name)
		}
		if err := nodeOK(x); err != nil {
			return err
		}
		s, _ := json.Marshal(x.Name)
		b.WriteString(`{"node":`)
		b.Write(s)
		b.WriteByte('}')
	default:
		return fmt.Errorf("value of type %T cannot be stored (allowed: %s)", v, valueTypes)
	}
	return nil
}

// appendObject writes a map as a JSON object of tagged values, keys sorted;
// a nil map is null.
func appendObject(b *bytes.Buffer, m map[string]any, nodeOK func(*ir.Node) error) error {
	if m == nil {
		b.WriteString("null")
		return nil
	}
	b.WriteByte('{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte(',')
		}
		ks, _ := json.Marshal(k)
		b.Write(ks)
		b.WriteByte(':')
		if err := appendValue(b, m[k], nodeOK); err != nil {
			return fmt.Errorf("[%q]%s", k, errSuffix(err))
		}
	}
	b.WriteByte('}')
	return nil
}

// encodeObject returns the JSON object of tagged values of m (null for nil).
func encodeObject(m map[string]any, nodeOK func(*ir.Node) error) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := appendObject(&b, m, nodeOK); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// formatFloat writes a float as a JSON number that parses back to the same
// value, or as a string for the non-finite ones.
func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return `"nan"`
	case math.IsInf(f, 1):
		return `"inf"`
	case math.IsInf(f, -1):
		return `"-inf"`
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// decodeValue reads one tagged value. lookup resolves node references
// (nil refuses them).
func decodeValue(raw json.RawMessage, lookup func(string) (*ir.Node, error)) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("empty value")
	}
	switch raw[0] {
	case 'n', 't', 'f':
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		return v, nil // nil or bool
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return s, nil
	case '{':
	default:
		return nil, fmt.Errorf("bare JSON value %s is not allowed: numbers are {\"int\": n} or {\"float\": x}, tuples {\"tuple\": [...]}", safetensors.Abbreviate(raw))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	if len(obj) != 1 {
		return nil, fmt.Errorf("tagged value %s must have exactly one key (int, int32, int64, float, float32, tuple, dict, slice, node)", safetensors.Abbreviate(raw))
	}
	var tag string
	for k := range obj {
		tag = k
	}
	return decodeTagged(tag, bytes.TrimSpace(obj[tag]), lookup)
}

func decodeTagged(tag string, body json.RawMessage, lookup func(string) (*ir.Node, error)) (any, error) {
	switch tag {
	case "int", "int64", "int32":
		bits := 64
		if tag == "int32" {
			bits = 32
		}
		n, err := strconv.ParseInt(string(body), 10, bits)
		if err != nil {
			return nil, fmt.Errorf("%s value %s is not a %d-bit integer", tag, safetensors.Abbreviate(body), bits)
		}
		switch tag {
		case "int64":
			return n, nil
		case "int32":
			return int32(n), nil
		}
		if int64(int(n)) != n {
			return nil, fmt.Errorf("int value %d does not fit this platform's int", n)
		}
		return int(n), nil
	case "float", "float32":
		bits := 64
		if tag == "float32" {
			bits = 32
		}
		f, err := parseFloat(body, bits)
		if err != nil {
			return nil, fmt.Errorf("%s value %s: %w", tag, safetensors.Abbreviate(body), err)
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case "tuple":
		var elems []json.RawMessage
		if err := json.Unmarshal(body, &elems); err != nil || elems == nil {
			return nil, fmt.Errorf("tuple must be a JSON array, got %s", safetensors.Abbreviate(body))
		}
		out := make([]any, len(elems))
		for i, e := range elems {
			v, err := decodeValue(e, lookup)
			if err != nil {
				return nil, fmt.Errorf("[%d]%s", i, errSuffix(err))
			}
			out[i] = v
		}
		return out, nil
	case "dict":
		m, err := decodeObject(body, lookup)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("dict must be a JSON object, got null")
		}
		return m, nil
	case "slice":
		var bounds []*int
		if err := json.Unmarshal(body, &bounds); err != nil || len(bounds) != 3 {
			return nil, fmt.Errorf("slice must be [start, stop, step] (integers or null), got %s", safetensors.Abbreviate(body))
		}
		return ir.Slice{Start: bounds[0], Stop: bounds[1], Step: bounds[2]}, nil
	case "node":
		var name string
		if err := json.Unmarshal(body, &name); err != nil {
			return nil, fmt.Errorf("node reference must be a node name string, got %s", safetensors.Abbreviate(body))
		}
		if lookup == nil {
			return nil, fmt.Errorf("node reference %q is not allowed here", name)
		}
		return lookup(name)
	}
	return nil, fmt.Errorf("unknown tag %q (allowed: int, int32, int64, float, float32, tuple, dict, slice, node)", tag)
}

// parseFloat reads a JSON number or one of "nan", "inf", "-inf".
func parseFloat(body json.RawMessage, bits int) (float64, error) {
	if len(body) > 0 && body[0] == '"' {
		var s string
		if err := json.Unmarshal(body, &s); err != nil {
			return 0, err
		}
		switch s {
		case "nan":
			return math.NaN(), nil
		case "inf":
			return math.Inf(1), nil
		case "-inf":
			return math.Inf(-1), nil
		}
		return 0, fmt.Errorf("want a number or \"nan\", \"inf\", \"-inf\"")
	}
	if !json.Valid(body) || len(body) == 0 || (body[0] != '-' && (body[0] < '0' || body[0] > '9')) {
		return 0, fmt.Errorf("want a number or \"nan\", \"inf\", \"-inf\"")
	}
	return strconv.ParseFloat(string(body), bits)
}

// decodeObject reads a JSON object of tagged values (null gives nil).
func decodeObject(raw json.RawMessage, lookup func(string) (*ir.Node, error)) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("want a JSON object of values, got %s", safetensors.Abbreviate(raw))
	}
	out := make(map[string]any, len(obj))
	for _, k := range sortedKeys(obj) {
		v, err := decodeValue(obj[k], lookup)
		if err != nil {
			return nil, fmt.Errorf("[%q]%s", k, errSuffix(err))
		}
		out[k] = v
	}
	return out, nil
}
