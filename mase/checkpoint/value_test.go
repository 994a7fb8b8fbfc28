package checkpoint

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/ir"
)

func intp(i int) *int { return &i }

func TestValueEncodingRoundTrip(t *testing.T) {
	g := ir.New()
	x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	values := []any{
		nil, true, false, "", "float32", "quote \" and \\ and ünï",
		0, -5, math.MaxInt64, math.MinInt, int64(math.MinInt64), int32(-7), int32(math.MaxInt32),
		0.1, -math.MaxFloat32, math.MaxFloat64, 5e-324, 1e21, 1.0, math.Inf(1), math.Inf(-1),
		float32(0.1), float32(-3.4028235e38), float32(1e-45),
		[]any{}, []any{1, []any{ir.Slice{}, 0}}, []any{x, 2.5, "s"},
		map[string]any{}, map[string]any{"b": []any{nil, int64(3)}, "a": map[string]any{"n": x}},
		ir.Slice{Start: intp(1), Stop: nil, Step: intp(-1)}, ir.Slice{Stop: intp(0)},
		x,
	}
	nodeOK := func(n *ir.Node) error { return nil }
	lookup := func(name string) (*ir.Node, error) {
		if n := g.Node(name); n != nil {
			return n, nil
		}
		return nil, fmt.Errorf("no node %q", name)
	}
	for _, v := range values {
		raw, err := encodeValue(v, nodeOK)
		if err != nil {
			t.Errorf("encode %#v: %v", v, err)
			continue
		}
		if !json.Valid(raw) {
			t.Errorf("encode %#v: invalid JSON %s", v, raw)
		}
		got, err := decodeValue(raw, lookup)
		if err != nil {
			t.Errorf("decode %s: %v", raw, err)
			continue
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("%#v → %s → %#v (%T)", v, raw, got, got)
		}
	}
	// Signs of zero and NaN survive (DeepEqual cannot see them).
	for _, v := range []any{math.Copysign(0, -1), float32(math.Copysign(0, -1)), math.NaN(), float32(math.NaN())} {
		raw, _ := encodeValue(v, nil)
		got, err := decodeValue(raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch w := v.(type) {
		case float64:
			g, ok := got.(float64)
			if !ok || math.Float64bits(g) != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
				t.Errorf("%v → %s → %v", v, raw, got)
			}
		case float32:
			g, ok := got.(float32)
			if !ok || math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
				t.Errorf("%v → %s → %v", v, raw, got)
			}
		}
	}
}

func TestValueEncodingErrors(t *testing.T) {
	g := ir.New()
	x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	for _, c := range []struct {
		v    any
		want string
	}{
		{tensors.FromValue([]float32{1}), "*tensors.Tensor cannot be stored (allowed: nil, bool"},
		{[]int{1, 2}, "[]int cannot be stored"},
		{[]any{1, map[string]any{"k": uint8(3)}}, `[1]["k"]: value of type uint8`},
		{x, "node reference %x is not allowed here"},
	} {
		if _, err := encodeValue(c.v, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("encode %#v: %v, want %q", c.v, err, c.want)
		}
	}
	lookup := func(name string) (*ir.Node, error) { return nil, fmt.Errorf("no node %q defined before", name) }
	for raw, want := range map[string]string{
		`3`:                         "bare JSON value 3 is not allowed",
		`[1]`:                       "bare JSON value",
		`{"int": 1.5}`:              "int value 1.5 is not a 64-bit integer",
		`{"int32": 3000000000}`:     "not a 32-bit integer",
		`{"float": "huge"}`:         `want a number or "nan"`,
		`{"float": true}`:           `want a number or "nan"`,
		`{"int": 1, "float": 2}`:    "exactly one key",
		`{"complex": 1}`:            `unknown tag "complex" (allowed: int`,
		`{"slice": [1, 2]}`:         "slice must be [start, stop, step]",
		`{"tuple": {}}`:             "tuple must be a JSON array",
		`{"tuple": [1]}`:            "[0]: bare JSON value",
		`{"dict": null}`:            "dict must be a JSON object",
		`{"dict": {"a": {"x": 1}}}`: `["a"]: unknown tag "x"`,
		`{"node": "later"}`:         `no node "later" defined before`,
		`{"node": 3}`:               "node reference must be a node name string",
	} {
		if _, err := decodeValue(json.RawMessage(raw), lookup); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("decode %s: %v, want %q", raw, err, want)
		}
	}
	if _, err := decodeValue(json.RawMessage(`{"node": "x"}`), nil); err == nil || !strings.Contains(err.Error(), "not allowed here") {
		t.Errorf("node reference without lookup: %v", err)
	}
}
