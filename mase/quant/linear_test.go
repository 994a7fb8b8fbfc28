package quant

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"
)

// t3Config is Tutorial 3's PTQ config.
func t3Config() map[string]any {
	return map[string]any{"name": "integer",
		"data_in_width": 8, "data_in_frac_width": 4,
		"weight_width": 8, "weight_frac_width": 4,
		"bias_width": 8, "bias_frac_width": 4}
}

// goodConfigs has one valid config per Linear name, as JSON (so numbers
// arrive as float64, as they do from a JSON or notebook config).
var goodConfigs = map[string]string{
	"integer":          `{"name":"integer","data_in_width":8,"data_in_frac_width":4,"weight_width":8,"weight_frac_width":4,"bias_width":8,"bias_frac_width":4,"data_out_width":16,"data_out_frac_width":8,"floor":true}`,
	"fixed":            `{"name":"fixed","data_in_width":8,"data_in_frac_width":3,"weight_width":8,"weight_frac_width":3,"bias_width":8,"bias_frac_width":3}`,
	"minifloat_ieee":   `{"name":"minifloat_ieee","data_in_width":8,"data_in_exponent_width":4,"data_in_exponent_bias":7,"weight_width":8,"weight_exponent_width":4,"weight_exponent_bias":null,"bias_width":8,"bias_exponent_width":4}`,
	"minifloat_denorm": `{"name":"minifloat_denorm","data_in_width":8,"data_in_exponent_width":4,"data_in_exponent_bias":"None","weight_width":8,"weight_exponent_width":4,"bias_width":8,"bias_exponent_width":4,"bias_exponent_bias":"none"}`,
	"log":              `{"name":"log","data_in_width":8,"data_in_exponent_bias":null,"weight_width":8,"bias_width":8,"bias_exponent_bias":60}`,
	"block_fp":         `{"name":"block_fp","data_in_width":8,"data_in_exponent_width":8,"data_in_exponent_bias":null,"data_in_block_size":[1,16],"weight_width":8,"weight_exponent_width":8,"weight_block_size":[1,16],"bias_width":8,"bias_exponent_width":8,"bias_block_size":16}`,
	"block_minifloat":  `{"name":"block_minifloat","data_in_width":8,"data_in_exponent_width":4,"data_in_exponent_bias_width":8,"data_in_block_size":[1,16],"weight_width":8,"weight_exponent_width":4,"weight_exponent_bias_width":8,"weight_block_size":[1,16],"bias_width":8,"bias_exponent_width":4,"bias_exponent_bias_width":8,"bias_block_size":[16],"data_in_skip_first_dim":false}`,
	"block_log":        `{"name":"block_log","data_in_width":8,"data_in_exponent_bias_width":8,"data_in_block_size":[1,16],"weight_width":8,"weight_exponent_bias_width":8,"weight_block_size":[1,16],"bias_width":8,"bias_exponent_bias_width":8,"bias_block_size":[16]}`,
	"binary":           `{"name":"binary","weight_stochastic":false,"weight_bipolar":true}`,
	"binary_scaling":   `{"name":"binary_scaling","data_in_stochastic":false,"data_in_bipolar":true,"weight_stochastic":false,"weight_bipolar":true,"bias_stochastic":false,"bias_bipolar":true,"binary_training":true}`,
	"binary_residual":  `{"name":"binary_residual","data_in_stochastic":false,"weight_stochastic":false,"data_in_bipolar":true,"weight_bipolar":true,"binary_training":true,"data_in_levels":3}`,
	"ternary":          `{"name":"ternary","weight_scaling_factor":true,"weight_mean":0.1,"weight_median":"NA","weight_max":null}`,
	"mxint8":           `{"name":"mxint8","weight_group_size":32,"bias_group_size":8}`,
}

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseLinearConfigT3(t *testing.T) {
	cfg := t3Config()
	c, err := ParseLinearConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{Format: Integer, Width: 8, FracWidth: 4}
	for _, s := range []*Spec{c.DataIn, c.Weight, c.Bias} {
		if s == nil || !reflect.DeepEqual(*s, want) {
			t.Errorf("operand spec %+v, want %+v", s, want)
		}
	}
	if c.DataOut != nil || c.TypeName() != "LinearInteger" || c.MetaType() != "integer" {
		t.Errorf("config %+v (type %s, meta %s)", c, c.TypeName(), c.MetaType())
	}
	if p := c.Weight.Precision(); !reflect.DeepEqual(p, []any{8, 4}) {
		t.Errorf("precision %v, want [8 4]", p)
	}
	if sum, err := c.Weight.PrecisionSum(); err != nil || sum != 12 {
		t.Errorf("precision sum %v, %v; want 12 (MASE counts integer 8/4 as 12 bits)", sum, err)
	}
}

func TestParseLinearConfigEveryName(t *testing.T) {
	if len(goodConfigs) != len(LinearNames()) {
		t.Fatalf("%d good configs for %d names", len(goodConfigs), len(LinearNames()))
	}
	classes := map[string]string{"integer": "LinearInteger", "fixed": "LinearInteger", "minifloat_ieee": "LinearMinifloatIEEE",
		"minifloat_denorm": "LinearMinifloatDenorm", "log": "LinearLog", "block_fp": "LinearBlockFP", "block_minifloat": "LinearBlockMinifloat",
		"block_log": "LinearBlockLog", "binary": "LinearBinary", "binary_scaling": "LinearBinaryScaling",
		"binary_residual": "LinearBinaryResidualSign", "ternary": "LinearTernary", "mxint8": "LinearMXInt8"}
	for _, name := range LinearNames() {
		cfg := decode(t, goodConfigs[name])
		before := maps.Clone(cfg)
		c, err := ParseLinearConfig(cfg)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(cfg, before) {
			t.Errorf("%s: the caller's map changed", name)
		}
		if got, err := LinearTypeName(name); err != nil || got != classes[name] || c.TypeName() != classes[name] {
			t.Errorf("LinearTypeName(%s) = %s, %v; want %s", name, got, err, classes[name])
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: parsed config fails Validate: %v", name, err)
		}
		// The config survives JSON (QuantizedLinear is saved that way).
		b, _ := json.Marshal(c)
		var back LinearConfig
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
			t.Errorf("%s: JSON round trip %s gave %+v, %v", name, b, back, err)
		}
	}
	// Specific decodings.
	c, _ := ParseLinearConfig(decode(t, goodConfigs["block_fp"]))
	if !c.DataIn.SkipFirstDim || c.Weight.SkipFirstDim || len(c.Bias.BlockSize) != 1 || c.Bias.BlockSize[0] != 16 {
		t.Errorf("block_fp: data_in skip %v (want the default true), weight skip %v, bias block %v", c.DataIn.SkipFirstDim, c.Weight.SkipFirstDim, c.Bias.BlockSize)
	}
	c, _ = ParseLinearConfig(decode(t, goodConfigs["block_minifloat"]))
	if c.DataIn.SkipFirstDim {
		t.Error("block_minifloat: data_in_skip_first_dim false ignored")
	}
	c, _ = ParseLinearConfig(decode(t, goodConfigs["integer"]))
	if c.DataOut == nil || c.DataOut.Width != 16 || !c.Weight.Floor || !c.DataOut.Floor {
		t.Errorf("integer data_out/floor: %+v", c)
	}
	c, _ = ParseLinearConfig(decode(t, goodConfigs["fixed"]))
	if c.MetaType() != "fixed" || c.Weight.MetaType() != "fixed" {
		t.Errorf("fixed keeps its name in metadata: %s/%s", c.MetaType(), c.Weight.MetaType())
	}
	c, _ = ParseLinearConfig(decode(t, goodConfigs["binary"]))
	if c.DataIn != nil || c.Bias != nil || !c.Weight.Bipolar || !reflect.DeepEqual(c.Weight.Precision(), []any{1, false, true}) {
		t.Errorf("binary: %+v precision %v", c, c.Weight.Precision())
	}
	c, _ = ParseLinearConfig(decode(t, goodConfigs["binary_residual"]))
	if c.DataIn == nil || c.DataIn.Levels != 3 || !c.BinaryTraining || c.Bias != nil {
		t.Errorf("binary_residual: %+v", c)
	}
	c, _ = ParseLinearConfig(decode(t, `{"name":"binary_residual","data_in_stochastic":0,"weight_stochastic":0,"data_in_bipolar":1,"weight_bipolar":1,"binary_training":0,"data_in_residual_sign":false}`))
	if c.DataIn != nil || c.BinaryTraining || !c.Weight.Bipolar {
		t.Errorf("binary_residual without residual sign, 0/1 flags: %+v", c)
	}
	c, _ = ParseLinearConfig(decode(t, goodConfigs["ternary"]))
	if p := c.Weight.Precision(); !reflect.DeepEqual(p, []any{2, true, 0.1, nil, nil}) {
		t.Errorf("ternary precision %v", p)
	}
	c, _ = ParseLinearConfig(decode(t, goodConfigs["mxint8"]))
	if c.DataIn != nil || c.Bias == nil || c.Bias.GroupSize != 8 || c.Weight.GroupSize != 32 {
		t.Errorf("mxint8: %+v", c)
	}
	c, _ = ParseLinearConfig(decode(t, goodConfigs["minifloat_ieee"]))
	if *c.DataIn.ExponentBias != 7 || c.Weight.ExponentBias != nil || !reflect.DeepEqual(c.Weight.Precision(), []any{8, 4, nil}) {
		t.Errorf("minifloat_ieee bias: %+v", c)
	}
	if _, err := c.Weight.PrecisionSum(); err == nil || !strings.Contains(err.Error(), "cannot be summed") {
		t.Errorf("PrecisionSum with None: %v", err)
	}
}

// TestParseMASEConfigs parses the configs of MASE's configs/tests/quantize
// (TOML: integers are int64, flags 0/1, statistics "NA").
func TestParseMASEConfigs(t *testing.T) {
	for name, cfg := range map[string]map[string]any{
		"binary.toml": {"name": "binary", "binary_training": "NA", "data_in_width": int64(1), "data_in_frac_width": int64(0),
			"data_in_stochastic": int64(0), "data_in_bipolar": int64(1), "weight_width": int64(1), "weight_stochastic": int64(0),
			"weight_bipolar": int64(1), "bias_width": int64(1), "bias_stochastic": int64(0), "bias_bipolar": int64(1)},
		"ternary.toml": {"name": "ternary", "data_in_width": int64(2), "data_in_scaling_factor": false, "weight_width": int64(2),
			"weight_scaling_factor": false, "bias_width": int64(2), "bias_scaling_factor": false, "data_in_mean": "NA",
			"data_in_median": "NA", "data_in_max": "NA", "weight_mean": "NA", "weight_median": "NA", "weight_max": "NA",
			"bias_mean": "NA", "bias_median": "NA", "bias_max": "NA"},
		"block_fp.toml": {"name": "block_fp", "bias_block_size": []any{int64(16)}, "bias_exponent_bias": int64(127), "bias_exponent_width": int64(8),
			"bias_width": int64(7), "data_in_block_size": []any{int64(1), int64(16)}, "data_in_exponent_bias": int64(127),
			"data_in_exponent_width": int64(8), "data_in_width": int64(7), "weight_block_size": []int64{1, 16},
			"weight_exponent_bias": int64(127), "weight_exponent_width": int64(8), "weight_width": int64(7)},
		"log.toml": {"name": "log", "bias_exponent_bias": int64(128), "bias_width": int64(8), "data_in_exponent_bias": int64(128),
			"data_in_width": int64(8), "weight_exponent_bias": int64(128), "weight_width": int64(8)},
	} {
		if _, err := ParseLinearConfig(cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestParseLinearConfigErrors(t *testing.T) {
	with := func(base map[string]any, kv ...any) map[string]any {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil && kv[i] != "keepnil" {
				delete(m, kv[i].(string))
				continue
			}
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	t3 := t3Config()
	for _, tc := range []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"no name", with(t3, "name", nil), `no "name" (allowed: integer, fixed, minifloat_ieee`},
		{"name type", with(t3, "name", 3), `key "name": 3 (int) is not a string`},
		{"unknown name", with(t3, "name", "int8"), `unknown quantised Linear name "int8" (allowed: integer, fixed,`},
		{"missing key", with(t3, "data_in_frac_width", nil), `missing key "data_in_frac_width" (an integer, required by LinearInteger)`},
		{"unknown key", with(t3, "data_in_widht", 8), `unknown key "data_in_widht" in the integer config (LinearInteger takes: bias_frac_width, bias_width, bypass, data_in_frac_width, data_in_width, data_out_frac_width, data_out_width, floor, name, weight_frac_width, weight_width)`},
		{"8.5", with(t3, "weight_width", 8.5), `key "weight_width": 8.5 is not an integer (allowed: an integer)`},
		{"string int", with(t3, "weight_width", "8"), `key "weight_width": "8" (a string) is not an integer`},
		{"bool int", with(t3, "weight_width", true), `key "weight_width": true (a boolean) is not an integer`},
		{"width range", with(t3, "data_in_width", 40), `data_in_width 40 is out of range for integer (allowed: 1..32)`},
		{"zero width", with(t3, "bias_width", 0.0), `bias_width 0 is out of range for integer (allowed: 1..32)`},
		{"frac range", with(t3, "weight_frac_width", 9), `weight_frac_width 9 is out of range for integer (allowed: 0..8)`},
		{"negative frac", with(t3, "weight_frac_width", -1), `weight_frac_width -1 is out of range for integer (allowed: 0..8)`},
		{"floor type", with(t3, "floor", "yes"), `key "floor": "yes" (a string) is not a boolean (allowed: true, false, 0 or 1)`},
		{"floor 2", with(t3, "floor", 2), `key "floor": 2 (int) is not a boolean`},
		{"data_out half", with(t3, "data_out_width", 8), `missing key "data_out_frac_width"`},
		{"minifloat exp", decode(t, `{"name":"minifloat_ieee","data_in_width":8,"data_in_exponent_width":8,"weight_width":8,"weight_exponent_width":4,"bias_width":8,"bias_exponent_width":4}`),
			`data_in_width 8 is out of range for minifloat_ieee (allowed: 9..32)`},
		{"minifloat bias", decode(t, `{"name":"minifloat_ieee","data_in_width":8,"data_in_exponent_width":4,"data_in_exponent_bias":2000,"weight_width":8,"weight_exponent_width":4,"bias_width":8,"bias_exponent_width":4}`),
			`data_in_exponent_bias 2000 gives exponents -2000..-1985 for minifloat_ieee`},
		{"minifloat bias type", decode(t, `{"name":"minifloat_ieee","data_in_width":8,"data_in_exponent_width":4,"data_in_exponent_bias":"auto","weight_width":8,"weight_exponent_width":4,"bias_width":8,"bias_exponent_width":4}`),
			`key "data_in_exponent_bias": "auto" (a string) is not an integer (allowed: an integer, or None for the default bias)`},
		{"block size 0", decode(t, strings.Replace(goodConfigs["block_fp"], `"weight_block_size":[1,16]`, `"weight_block_size":[0,16]`, 1)),
			`weight_block_size [0 16] for block_fp has entry 0 (allowed: positive sizes, or -1 for the whole dimension)`},
		{"block size type", decode(t, strings.Replace(goodConfigs["block_fp"], `"weight_block_size":[1,16]`, `"weight_block_size":"16"`, 1)),
			`key "weight_block_size": "16" (a string) is not a list of integers`},
		{"block size entry", decode(t, strings.Replace(goodConfigs["block_fp"], `"weight_block_size":[1,16]`, `"weight_block_size":[1,1.5]`, 1)),
			`key "weight_block_size": entry 1, 1.5, is not an integer`},
		{"block missing", decode(t, strings.Replace(goodConfigs["block_fp"], `,"weight_block_size":[1,16]`, ``, 1)),
			`missing key "weight_block_size" (a list of block sizes, required by LinearBlockFP)`},
		{"binary missing", decode(t, `{"name":"binary","weight_stochastic":false}`), `missing key "weight_bipolar" (true or false, required by LinearBinary)`},
		{"binary width", decode(t, `{"name":"binary","weight_stochastic":false,"weight_bipolar":true,"weight_width":2}`), `weight_width 2 is out of range for binary (allowed: 1, or unset)`},
		{"residual levels", decode(t, `{"name":"binary_residual","data_in_stochastic":false,"weight_stochastic":false,"data_in_bipolar":true,"weight_bipolar":true,"binary_training":true,"data_in_levels":9}`),
			`data_in_levels 9 is out of range for binary_residual (allowed: 1..8)`},
		{"ternary stat", decode(t, `{"name":"ternary","weight_scaling_factor":true,"weight_mean":"big"}`), `key "weight_mean": "big" (a string) is not a number (allowed: a finite number, None or "NA")`},
		{"mxint8 group", decode(t, `{"name":"mxint8","weight_group_size":24}`), `weight_group_size 24 is not supported by mxint8 (allowed: 8, 16, 32, 64, 128, 256, 512)`},
		{"mxint8 width", decode(t, `{"name":"mxint8","weight_group_size":32,"weight_width":4}`), `weight_width 4 is out of range for mxint8 (allowed: 8, or unset)`},
		{"bypass type", with(t3, "bypass", "no"), `key "bypass": "no" (a string) is not a boolean`},
	} {
		before := maps.Clone(tc.cfg)
		_, err := ParseLinearConfig(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
		if !reflect.DeepEqual(tc.cfg, before) {
			t.Errorf("%s: the caller's map changed", tc.name)
		}
	}
	// bypass: required keys may be missing; a plain Linear.
	c, err := ParseLinearConfig(map[string]any{"name": "integer", "bypass": true})
	if err != nil || !c.Bypass || c.Weight != nil {
		t.Errorf("bypass: %+v, %v", c, err)
	}
	// JSON numbers arrive as float64: 8.0 is 8.
	if c, err := ParseLinearConfig(with(t3, "weight_width", 8.0)); err != nil || c.Weight.Width != 8 {
		t.Errorf("8.0: %+v, %v", c, err)
	}
}

func TestLinearTypeNameErrors(t *testing.T) {
	_, err := LinearTypeName("linear_integer")
	if err == nil || !strings.Contains(err.Error(), `unknown quantised Linear name "linear_integer" (allowed: integer, fixed, minifloat_ieee, minifloat_denorm, log, block_fp, block_minifloat, block_log, binary, binary_scaling, binary_residual, ternary, mxint8)`) {
		t.Errorf("error %v", err)
	}
}

func TestLinearConfigValidate(t *testing.T) {
	w := &Spec{Format: Integer, Width: 8, FracWidth: 4}
	for _, tc := range []struct {
		cfg  LinearConfig
		want string
	}{
		{LinearConfig{Name: "integer", Weight: w, Bias: w}, "integer config has no data_in quantiser (LinearInteger quantises data_in, weight, bias, data_out)"},
		{LinearConfig{Name: "binary", Weight: &Spec{Format: Binary}, DataIn: &Spec{Format: Binary}}, "binary config has a data_in quantiser, but LinearBinary does not quantise data_in (it quantises weight)"},
		{LinearConfig{Name: "log", DataIn: w, Weight: w, Bias: w}, `log config: the data_in quantiser is "integer" (allowed: log)`},
		{LinearConfig{Name: "integer", DataIn: w, Weight: &Spec{Format: Integer, Width: 8, FracWidth: 12}, Bias: w}, "integer config: weight_frac_width 12 is out of range for integer (allowed: 0..8)"},
		{LinearConfig{Name: "integer", DataIn: w, Weight: &Spec{Format: Integer, Width: 8, ExponentWidth: 3}, Bias: w}, "integer config: weight_exponent_width is not used by integer (it reads weight_width, weight_frac_width, weight_floor)"},
		{LinearConfig{Name: "int"}, `unknown quantised Linear name "int"`},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
