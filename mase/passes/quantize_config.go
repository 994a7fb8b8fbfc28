package passes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// QuantizeArgs is the configuration of QuantizeTransform, in the shape of
// MASE's quantize_transform_pass dict:
//
//	{"by": "type",
//	 "default": {"config": {"name": None}},
//	 "linear":  {"config": {"name": "integer", "data_in_width": 8, ...}}}
//
// Build it in Go, or decode it with ParseQuantizeArgs (a map, e.g. from
// JSON), QuantizeArgsFromJSON or QuantizeArgsFromTOML. QuantizeTransform
// never modifies it, so one value serves any number of calls (MASE pops
// "by" from the caller's dict, so its second call fails).
type QuantizeArgs struct {
	// By picks how a node finds its entry: "type" (its mase_op, e.g.
	// "linear"), "name" (its node name) or "regex_name" (the first
	// pattern, in order, that matches the whole node name).
	By string
	// Default is the "default" entry's config, used for nodes without an
	// entry of their own; nil or a name of None/"" leaves them alone.
	Default map[string]any
	// Entries are the other entries, in order (the order matters for
	// regex_name).
	Entries []QuantizeEntry
}

// QuantizeEntry is one keyed entry: an op, a node name or a pattern, with
// its config (the format's "name" and keys such as "data_in_width").
type QuantizeEntry struct {
	Key    string
	Config map[string]any
}

// Allowed values of QuantizeArgs.By.
var quantizeBy = []string{"type", "name", "regex_name"}

// QuantizeableOps are the mase_op values MASE's pass considers
// (QUANTIZEABLE_OP), plus gomase's leaky_relu. gomase replaces linear
// nodes and gives relu/leaky_relu a fixed-point format; a non-empty config
// for any other op is an error rather than a silent no-op.
var QuantizeableOps = []string{"add", "bmm", "conv1d", "conv2d", "convtranspose2d", "matmul", "mul", "linear", "relu", "leaky_relu", "sub",
	"batch_norm2d", "layer_norm", "group_norm", "instance_norm2d", "rms_norm", "selu", "tanh", "gelu", "softsign", "softplus",
	"grouped_query_attention"}

// QuantizeByType returns the common args that quantize every node of one
// op (e.g. "linear") with config and leave the rest in float.
func QuantizeByType(op string, config map[string]any) QuantizeArgs {
	return QuantizeArgs{By: "type", Entries: []QuantizeEntry{{Key: op, Config: config}}}
}

// Clone returns a deep copy of the args.
func (a QuantizeArgs) Clone() QuantizeArgs {
	out := QuantizeArgs{By: a.By, Default: cloneConfig(a.Default)}
	for _, e := range a.Entries {
		out.Entries = append(out.Entries, QuantizeEntry{Key: e.Key, Config: cloneConfig(e.Config)})
	}
	return out
}

// cloneConfig copies a config map, including nested lists (block sizes).
func cloneConfig(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if l, ok := v.([]any); ok {
			v = slices.Clone(l)
		}
		out[k] = v
	}
	return out
}

// Validate checks the shape of the args: By, the keys (ops for "type",
// compilable patterns for "regex_name"), and that each config names a
// format or None. The format's own keys are checked when a node uses it.
func (a QuantizeArgs) Validate() error {
	if !slices.Contains(quantizeBy, a.By) {
		if a.By == "" {
			return fmt.Errorf(`quantize: "by" is missing (allowed: %s)`, strings.Join(quantizeBy, ", "))
		}
		return fmt.Errorf(`quantize: unsupported "by" %q (allowed: %s)`, a.By, strings.Join(quantizeBy, ", "))
	}
	seen := map[string]bool{}
	for _, e := range a.Entries {
		if seen[e.Key] {
			return fmt.Errorf("quantize: entry %q appears twice", e.Key)
		}
		seen[e.Key] = true
		switch a.By {
		case "type":
			if !slices.Contains(QuantizeableOps, e.Key) {
				return fmt.Errorf("quantize: entry %q is not a quantizable op (by type the keys are: default, %s)", e.Key, strings.Join(QuantizeableOps, ", "))
			}
		case "regex_name":
			if _, err := regexp.Compile(e.Key); err != nil {
				return fmt.Errorf("quantize: entry %q is not a valid regular expression: %w", e.Key, err)
			}
		}
		if _, err := formatName(e.Config); err != nil {
			return fmt.Errorf("quantize: entry %q: %w", e.Key, err)
		}
	}
	if _, err := formatName(a.Default); err != nil {
		return fmt.Errorf("quantize: entry \"default\": %w", err)
	}
	return nil
}

// formatName returns a config's "name" ("" for None, a missing config or
// a missing name).
func formatName(cfg map[string]any) (string, error) {
	if cfg == nil {
		return "", nil
	}
	v, ok := cfg["name"]
	if !ok || v == nil {
		if len(cfg) > 1 || (len(cfg) == 1 && !ok) {
			return "", fmt.Errorf(`config has keys but no "name" (the format, e.g. "integer"; None skips the node)`)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf(`config "name" is %T, want a string such as "integer" or None`, v)
	}
	return s, nil
}

// forNode returns the config a node gets: by its op, name or the first
// matching pattern, else the default. nil means the node stays as it is.
func (a QuantizeArgs) forNode(op, name string) (key string, cfg map[string]any) {
	for _, e := range a.Entries {
		switch a.By {
		case "type":
			if e.Key == op {
				return e.Key, e.Config
			}
		case "name":
			if e.Key == name {
				return e.Key, e.Config
			}
		case "regex_name":
			if regexp.MustCompile(`^(?:` + e.Key + `)$`).MatchString(name) {
				return e.Key, e.Config
			}
		}
	}
	return "default", a.Default
}

// ParseQuantizeArgs reads MASE's dict shape from a decoded map (JSON,
// TOML or Go literals). Every entry other than "by" must be an object with
// exactly one key, "config". Entries are ordered by key, since a Go map
// has no order; use QuantizeArgsFromJSON/TOML to keep the file's order
// for regex_name. The map is not modified.
func ParseQuantizeArgs(m map[string]any) (QuantizeArgs, error) {
	return parseQuantizeArgs(m, slices.Sorted(maps.Keys(m)))
}

func parseQuantizeArgs(m map[string]any, order []string) (QuantizeArgs, error) {
	var a QuantizeArgs
	by, ok := m["by"]
	if !ok {
		return a, fmt.Errorf(`quantize: "by" is missing (allowed: %s)`, strings.Join(quantizeBy, ", "))
	}
	if a.By, ok = by.(string); !ok {
		return a, fmt.Errorf(`quantize: "by" is %T, want a string (allowed: %s)`, by, strings.Join(quantizeBy, ", "))
	}
	for _, key := range order {
		if key == "by" {
			continue
		}
		entry, ok := m[key].(map[string]any)
		if !ok {
			return a, fmt.Errorf(`quantize: entry %q is %T, want an object {"config": {...}}`, key, m[key])
		}
		for k := range entry {
			if k != "config" {
				return a, fmt.Errorf(`quantize: entry %q has key %q (allowed: config)`, key, k)
			}
		}
		var cfg map[string]any
		switch c := entry["config"].(type) {
		case nil:
		case map[string]any:
			cfg = cloneConfig(c)
		default:
			return a, fmt.Errorf(`quantize: entry %q: "config" is %T, want an object`, key, c)
		}
		if key == "default" {
			a.Default = cfg
		} else {
			a.Entries = append(a.Entries, QuantizeEntry{Key: key, Config: cfg})
		}
	}
	return a, a.Validate()
}

// QuantizeArgsFromJSON decodes the args from JSON, keeping the entries in
// the file's order. null stands for Python's None.
func QuantizeArgsFromJSON(data []byte) (QuantizeArgs, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return QuantizeArgs{}, fmt.Errorf("quantize config: invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return QuantizeArgs{}, fmt.Errorf("quantize config: unexpected data after the JSON object")
	}
	order, err := jsonKeyOrder(data)
	if err != nil {
		return QuantizeArgs{}, err
	}
	return parseQuantizeArgs(m, order)
}

// jsonKeyOrder lists the top-level keys of a JSON object in order.
func jsonKeyOrder(data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return nil, fmt.Errorf("quantize config: %w", err)
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("quantize config: %w", err)
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("quantize config: %w", err)
		}
	}
	return keys, nil
}

// QuantizeArgsFromTOML decodes the args from TOML as MASE's config files
// write them:
//
//	by = "type"
//	[default.config]
//	name = "NA"
//	[linear.config]
//	name = "integer"
//	data_in_width = 8
//
// A name of "NA" or "" skips (TOML has no None). Entries keep the file's
// order.
func QuantizeArgsFromTOML(data []byte) (QuantizeArgs, error) {
	var m map[string]any
	md, err := toml.Decode(string(data), &m)
	if err != nil {
		return QuantizeArgs{}, fmt.Errorf("quantize config: invalid TOML: %w", err)
	}
	var order []string
	for _, k := range md.Keys() {
		if len(k) > 0 && !slices.Contains(order, k[0]) {
			order = append(order, k[0])
		}
	}
	for _, v := range m {
		if entry, ok := v.(map[string]any); ok {
			if cfg, ok := entry["config"].(map[string]any); ok && cfg["name"] == "NA" {
				cfg["name"] = nil
			}
		}
	}
	return parseQuantizeArgs(toJSONTypes(m).(map[string]any), order)
}

// toJSONTypes turns TOML's int64 values and typed slices into the
// float64/[]any a JSON decoder gives, so one config decoder serves both.
func toJSONTypes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toJSONTypes(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toJSONTypes(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toJSONTypes(e)
		}
		return out
	case int64:
		return float64(x)
	}
	return v
}
