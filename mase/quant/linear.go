package quant

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// BinaryScaling is gomase's name for MASE's LinearBinaryScaling, which has
// no quantize-pass name in MASE (the lab constructs it directly).
const BinaryScaling = "binary_scaling"

// linearClasses maps a Linear config name to MASE's class, as MASE's
// quantized_module_map does for "linear_<name>" (plus binary_scaling and
// mxint8, which gomase adds).
var linearClasses = []struct{ name, class string }{
	{Integer, "LinearInteger"},
	{Fixed, "LinearInteger"},
	{MinifloatIEEE, "LinearMinifloatIEEE"},
	{MinifloatDenorm, "LinearMinifloatDenorm"},
	{Log, "LinearLog"},
	{BlockFP, "LinearBlockFP"},
	{BlockMinifloat, "LinearBlockMinifloat"},
	{BlockLog, "LinearBlockLog"},
	{Binary, "LinearBinary"},
	{BinaryScaling, "LinearBinaryScaling"},
	{BinaryResidual, "LinearBinaryResidualSign"},
	{Ternary, "LinearTernary"},
	{MXInt8, "LinearMXInt8"},
}

// LinearNames lists the config names a quantised Linear accepts.
func LinearNames() []string {
	out := make([]string, len(linearClasses))
	for i, c := range linearClasses {
		out[i] = c.name
	}
	return out
}

// LinearTypeName maps a Linear config name to MASE's class name:
// integer and fixed → LinearInteger, minifloat_ieee → LinearMinifloatIEEE,
// minifloat_denorm → LinearMinifloatDenorm, log → LinearLog, block_fp →
// LinearBlockFP, block_minifloat → LinearBlockMinifloat, block_log →
// LinearBlockLog, binary → LinearBinary, binary_scaling →
// LinearBinaryScaling, binary_residual → LinearBinaryResidualSign, ternary
// → LinearTernary, mxint8 → LinearMXInt8 (gomase's, after Lab 4's
// QLinearPacked).
func LinearTypeName(name string) (string, error) {
	for _, c := range linearClasses {
		if c.name == name {
			return c.class, nil
		}
	}
	return "", fmt.Errorf("unknown quantised Linear name %q (allowed: %s)", name, strings.Join(LinearNames(), ", "))
}

// LinearConfig is the configuration of a quantised Linear layer: MASE's
// flat config dict ({"name": "integer", "data_in_width": 8, ...}) decoded
// into one Spec per operand. A nil operand is not quantised.
//
// Which operands each class quantises (as MASE's forward does):
// integer/fixed, minifloat_*, log and block_* quantise data_in, weight and
// bias (integer also data_out when data_out_width is given); binary and
// ternary only the weight; binary_scaling all three when BinaryTraining,
// else only clamps the weight to [−1, 1]; binary_residual expands data_in
// with residual signs (DataIn nil when data_in_residual_sign is false) and
// binarises the weight when BinaryTraining (else clamps it); mxint8 the
// weight, and data_in and bias when their group sizes are given.
type LinearConfig struct {
	// Name is the config's "name" as given ("fixed" stays "fixed").
	Name string `json:"name"`
	// Bypass is MASE's "bypass": a plain float Linear.
	Bypass  bool  `json:"bypass,omitempty"`
	DataIn  *Spec `json:"data_in,omitempty"`
	Weight  *Spec `json:"weight,omitempty"`
	Bias    *Spec `json:"bias,omitempty"`
	DataOut *Spec `json:"data_out,omitempty"`
	// BinaryTraining is binary_training (binary_scaling, binary_residual).
	BinaryTraining bool `json:"binary_training,omitempty"`
}

// TypeName is MASE's class name for the config (LinearTypeName).
func (c LinearConfig) TypeName() string {
	n, _ := LinearTypeName(c.Name)
	return n
}

// MetaType is MASE's metadata "type" of the layer's quantised values: the
// config name, as update_quant_meta_param writes it ("fixed" stays
// "fixed"); binary_scaling, which MASE's pass cannot produce, reports
// "binary".
func (c LinearConfig) MetaType() string {
	if c.Name == BinaryScaling {
		return Binary
	}
	return c.Name
}

// operands lists the config's operands with their key prefixes.
func (c LinearConfig) operands() []struct {
	prefix string
	spec   *Spec
} {
	return []struct {
		prefix string
		spec   *Spec
	}{{"data_in", c.DataIn}, {"weight", c.Weight}, {"bias", c.Bias}, {"data_out", c.DataOut}}
}

// Validate checks a config built in Go or decoded from JSON: a known name,
// the operands the class needs present and in its format, and each Spec
// valid (errors name MASE's key, e.g. data_in_width).
func (c LinearConfig) Validate() error {
	class, err := LinearTypeName(c.Name)
	if err != nil {
		return err
	}
	want := map[string]string{} // operand → format ("" absent, "?" optional)
	format := c.Name
	if format == Fixed {
		format = Integer
	}
	switch c.Name {
	case Binary, Ternary:
		want["weight"] = format
	case BinaryScaling:
		want["data_in"], want["weight"], want["bias"] = Binary, Binary, Binary
	case BinaryResidual:
		want["data_in"], want["weight"] = "?"+BinaryResidual, Binary
	case MXInt8:
		want["data_in"], want["weight"], want["bias"] = "?"+MXInt8, MXInt8, "?"+MXInt8
	case Integer, Fixed:
		want["data_in"], want["weight"], want["bias"], want["data_out"] = format, format, format, "?"+format
	default:
		want["data_in"], want["weight"], want["bias"] = format, format, format
	}
	for _, op := range c.operands() {
		w, optional := want[op.prefix], strings.HasPrefix(want[op.prefix], "?")
		w = strings.TrimPrefix(w, "?")
		if op.spec == nil {
			if w != "" && !optional && !c.Bypass {
				return fmt.Errorf("%s config has no %s quantiser (%s quantises %s)", c.Name, op.prefix, class, quantised(want))
			}
			continue
		}
		if w == "" {
			return fmt.Errorf("%s config has a %s quantiser, but %s does not quantise %s (it quantises %s)", c.Name, op.prefix, class, op.prefix, quantised(want))
		}
		if op.spec.canonical() != w {
			return fmt.Errorf("%s config: the %s quantiser is %q (allowed: %s)", c.Name, op.prefix, op.spec.Format, w)
		}
		prefix := op.prefix + "_"
		if err := op.spec.ValidateNamed(func(f string) string { return prefix + f }); err != nil {
			return fmt.Errorf("%s config: %w", c.Name, err)
		}
	}
	return nil
}

func quantised(want map[string]string) string {
	var out []string
	for _, op := range []string{"data_in", "weight", "bias", "data_out"} {
		if want[op] != "" {
			out = append(out, op)
		}
	}
	return strings.Join(out, ", ")
}

// ParseLinearConfig decodes MASE's flat quantised-Linear config, the dict
// each Linear class of chop.nn.quantized.modules.linear reads. "name" is
// one of LinearNames ("fixed" is integer). Keys, by name (x, w, b stand for
// the data_in, weight and bias prefixes):
//
//	integer, fixed    {x,w,b}_width, {x,w,b}_frac_width; optional data_out_width
//	                  with data_out_frac_width, floor
//	minifloat_ieee,   {x,w,b}_width, {x,w,b}_exponent_width; optional
//	minifloat_denorm  {x,w,b}_exponent_bias (None or absent: the default bias)
//	log               {x,w,b}_width; optional {x,w,b}_exponent_bias
//	block_fp          {x,w,b}_width, _exponent_width, _block_size; optional
//	                  _exponent_bias, data_in_skip_first_dim (default true)
//	block_minifloat   {x,w,b}_width, _exponent_width, _exponent_bias_width,
//	                  _block_size; optional data_in_skip_first_dim
//	block_log         {x,w,b}_width, _exponent_bias_width, _block_size;
//	                  optional data_in_skip_first_dim
//	binary            weight_stochastic, weight_bipolar; optional weight_width
//	                  (1), and MASE's unused data_in_width, data_in_frac_width,
//	                  {x,b}_stochastic, {x,b}_bipolar, bias_width, binary_training
//	binary_scaling    {x,w,b}_stochastic, {x,w,b}_bipolar, binary_training;
//	                  optional {x,w,b}_width (1)
//	binary_residual   data_in_stochastic, weight_stochastic, data_in_bipolar,
//	                  weight_bipolar, binary_training; optional data_in_levels
//	                  (2), data_in_residual_sign (true), {x,w,b}_width (1),
//	                  and the unused bias_stochastic, bias_bipolar
//	ternary           weight_scaling_factor; optional weight_mean, _median,
//	                  _max (numbers, None or "NA"), weight_width (2), and the
//	                  unused data_in_/bias_ width, scaling_factor, mean,
//	                  median, max
//	mxint8            weight_group_size; optional data_in_group_size,
//	                  bias_group_size, {x,w,b}_width (8)
//
// Every name also takes "bypass" (then the required keys may be missing).
// Integers may be any Go integer type or an integral float64 (JSON
// numbers: 8.0 is 8, 8.5 is an error); flags are bools or 0/1 (MASE's TOML
// configs write 0/1); block sizes are an integer or a list of integers.
// Missing required keys, unknown keys, wrong value types and values out of
// range (Spec.Validate) are errors naming the key and what is allowed. The
// map is only read, never modified.
func ParseLinearConfig(cfg map[string]any) (LinearConfig, error) {
	rawName, ok := cfg["name"]
	if !ok || rawName == nil {
		return LinearConfig{}, fmt.Errorf(`quantised Linear config has no "name" (allowed: %s)`, strings.Join(LinearNames(), ", "))
	}
	name, ok := rawName.(string)
	if !ok {
		return LinearConfig{}, fmt.Errorf(`key "name": %s is not a string (allowed: %s)`, describe(rawName), strings.Join(LinearNames(), ", "))
	}
	if _, err := LinearTypeName(name); err != nil {
		return LinearConfig{}, fmt.Errorf(`key "name": %w`, err)
	}
	r := &reader{cfg: cfg, name: name, known: map[string]bool{"name": true}}
	c := LinearConfig{Name: name}
	c.Bypass = r.flag("bypass", false)
	r.bypass = c.Bypass
	operands := []string{"data_in", "weight", "bias"}
	each := func(f func(op string) *Spec) (specs [3]*Spec) {
		for i, op := range operands {
			specs[i] = f(op)
		}
		return specs
	}
	set := func(s [3]*Spec) { c.DataIn, c.Weight, c.Bias = s[0], s[1], s[2] }
	switch name {
	case Integer, Fixed:
		floor := r.flag("floor", false)
		set(each(func(op string) *Spec {
			return &Spec{Format: name, Width: r.int(op+"_width", true), FracWidth: r.int(op+"_frac_width", true), Floor: floor}
		}))
		_, hasW := cfg["data_out_width"]
		_, hasF := cfg["data_out_frac_width"]
		if hasW || hasF {
			r.bypass = false // given one, the other is required
			c.DataOut = &Spec{Format: name, Width: r.int("data_out_width", true), FracWidth: r.int("data_out_frac_width", true), Floor: floor}
			r.bypass = c.Bypass
		} else {
			r.known["data_out_width"], r.known["data_out_frac_width"] = true, true
		}
	case MinifloatIEEE, MinifloatDenorm:
		set(each(func(op string) *Spec {
			return &Spec{Format: name, Width: r.int(op+"_width", true), ExponentWidth: r.int(op+"_exponent_width", true), ExponentBias: r.bias(op + "_exponent_bias")}
		}))
	case Log:
		set(each(func(op string) *Spec {
			return &Spec{Format: name, Width: r.int(op+"_width", true), ExponentBias: r.bias(op + "_exponent_bias")}
		}))
	case BlockFP:
		set(each(func(op string) *Spec {
			return &Spec{Format: name, Width: r.int(op+"_width", true), ExponentWidth: r.int(op+"_exponent_width", true),
				ExponentBias: r.bias(op + "_exponent_bias"), BlockSize: r.block(op + "_block_size")}
		}))
		c.DataIn.SkipFirstDim = r.flagDefault("data_in_skip_first_dim", true)
	case BlockMinifloat:
		set(each(func(op string) *Spec {
			return &Spec{Format: name, Width: r.int(op+"_width", true), ExponentWidth: r.int(op+"_exponent_width", true),
				ExponentBiasWidth: r.int(op+"_exponent_bias_width", true), BlockSize: r.block(op + "_block_size")}
		}))
		c.DataIn.SkipFirstDim = r.flagDefault("data_in_skip_first_dim", true)
	case BlockLog:
		set(each(func(op string) *Spec {
			return &Spec{Format: name, Width: r.int(op+"_width", true), ExponentBiasWidth: r.int(op+"_exponent_bias_width", true),
				BlockSize: r.block(op + "_block_size")}
		}))
		c.DataIn.SkipFirstDim = r.flagDefault("data_in_skip_first_dim", true)
	case Binary:
		c.Weight = &Spec{Format: Binary, Width: r.int("weight_width", false), Stochastic: r.flag("weight_stochastic", true), Bipolar: r.flag("weight_bipolar", true)}
		// MASE's LinearBinary passes data_in and bias through; its configs
		// still carry their keys.
		r.int("data_in_width", false)
		r.int("data_in_frac_width", false)
		r.int("bias_width", false)
		for _, k := range []string{"data_in_stochastic", "data_in_bipolar", "bias_stochastic", "bias_bipolar"} {
			r.flag(k, false)
		}
		r.flagOrNA("binary_training")
	case BinaryScaling:
		set(each(func(op string) *Spec {
			return &Spec{Format: Binary, Width: r.int(op+"_width", false), Stochastic: r.flag(op+"_stochastic", true), Bipolar: r.flag(op+"_bipolar", true)}
		}))
		c.BinaryTraining = r.flag("binary_training", true)
	case BinaryResidual:
		in := &Spec{Format: BinaryResidual, Width: r.int("data_in_width", false), Stochastic: r.flag("data_in_stochastic", true),
			Bipolar: r.flag("data_in_bipolar", true), Levels: r.intDefault("data_in_levels", defaultLevels)}
		c.Weight = &Spec{Format: Binary, Width: r.int("weight_width", false), Stochastic: r.flag("weight_stochastic", true), Bipolar: r.flag("weight_bipolar", true)}
		c.BinaryTraining = r.flag("binary_training", true)
		if r.flagDefault("data_in_residual_sign", true) {
			c.DataIn = in
		}
		r.int("bias_width", false)
		r.flag("bias_stochastic", false)
		r.flag("bias_bipolar", false)
	case Ternary:
		c.Weight = &Spec{Format: Ternary, Width: r.int("weight_width", false), ScalingFactor: r.flag("weight_scaling_factor", true),
			Mean: r.stat("weight_mean"), Median: r.stat("weight_median"), Max: r.stat("weight_max")}
		for _, op := range []string{"data_in", "bias"} { // passed through by MASE's LinearTernary
			r.int(op+"_width", false)
			r.flag(op+"_scaling_factor", false)
			r.stat(op + "_mean")
			r.stat(op + "_median")
			r.stat(op + "_max")
		}
	case MXInt8:
		c.Weight = &Spec{Format: MXInt8, Width: r.int("weight_width", false), GroupSize: r.int("weight_group_size", true)}
		for _, op := range []string{"data_in", "bias"} {
			w, g := r.int(op+"_width", false), r.int(op+"_group_size", false)
			if g != 0 {
				s := &Spec{Format: MXInt8, Width: w, GroupSize: g}
				if op == "data_in" {
					c.DataIn = s
				} else {
					c.Bias = s
				}
			}
		}
	}
	var unknown []string
	for k := range cfg {
		if !r.known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		var allowed []string
		for k := range r.known {
			allowed = append(allowed, k)
		}
		sort.Strings(allowed)
		class, _ := LinearTypeName(name)
		return LinearConfig{}, fmt.Errorf("unknown key %q in the %s config (%s takes: %s)", unknown[0], name, class, strings.Join(allowed, ", "))
	}
	if r.err != nil {
		return LinearConfig{}, r.err
	}
	if c.Bypass {
		// Keys given with bypass are checked for type only; the layer
		// ignores them, as MASE's does.
		return LinearConfig{Name: name, Bypass: true}, nil
	}
	if err := c.Validate(); err != nil {
		return LinearConfig{}, err
	}
	return c, nil
}

// reader reads typed keys of a config map, remembering the keys it knows
// and the first error.
type reader struct {
	cfg    map[string]any
	name   string
	known  map[string]bool
	bypass bool
	err    error
}

func (r *reader) fail(key, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("key %q: %s", key, fmt.Sprintf(format, args...))
	}
}

// get returns the key's value; a missing required key is an error.
func (r *reader) get(key string, required bool, what string) (any, bool) {
	r.known[key] = true
	v, ok := r.cfg[key]
	if !ok {
		if required && !r.bypass && r.err == nil {
			class, _ := LinearTypeName(r.name)
			r.err = fmt.Errorf("missing key %q (%s, required by %s)", key, what, class)
		}
		return nil, false
	}
	return v, true
}

func (r *reader) int(key string, required bool) int {
	v, ok := r.get(key, required, "an integer")
	if !ok {
		return 0
	}
	n, ok := AsInt(v)
	if !ok {
		r.fail(key, "%s is not an integer (allowed: an integer)", describe(v))
	}
	return n
}

func (r *reader) intDefault(key string, def int) int {
	if _, ok := r.cfg[key]; !ok {
		r.known[key] = true
		return def
	}
	return r.int(key, false)
}

func (r *reader) flag(key string, required bool) bool {
	v, ok := r.get(key, required, "true or false")
	if !ok {
		return false
	}
	b, ok := toBool(v)
	if !ok {
		r.fail(key, "%s is not a boolean (allowed: true, false, 0 or 1)", describe(v))
	}
	return b
}

func (r *reader) flagDefault(key string, def bool) bool {
	if _, ok := r.cfg[key]; !ok {
		r.known[key] = true
		return def
	}
	return r.flag(key, false)
}

// flagOrNA reads an unused flag that MASE's configs may set to "NA".
func (r *reader) flagOrNA(key string) {
	v, ok := r.get(key, false, "")
	if !ok || v == "NA" {
		return
	}
	if _, ok := toBool(v); !ok {
		r.fail(key, `%s is not a boolean (allowed: true, false, 0, 1 or "NA")`, describe(v))
	}
}

// bias reads an exponent bias: an integer, or None/"none"/"None" (or a
// missing key) for the default.
func (r *reader) bias(key string) *int {
	v, ok := r.get(key, false, "")
	if !ok || v == nil || v == "none" || v == "None" {
		return nil
	}
	n, ok := AsInt(v)
	if !ok {
		r.fail(key, `%s is not an integer (allowed: an integer, or None for the default bias)`, describe(v))
		return nil
	}
	return &n
}

// block reads a block size: an integer or a list of integers.
func (r *reader) block(key string) []int {
	v, ok := r.get(key, true, "a list of block sizes")
	if !ok {
		return nil
	}
	if n, ok := AsInt(v); ok {
		return []int{n}
	}
	var items []any
	switch l := v.(type) {
	case []any:
		items = l
	case []int:
		return slices.Clone(l)
	case []int64:
		for _, x := range l {
			items = append(items, x)
		}
	case []float64:
		for _, x := range l {
			items = append(items, x)
		}
	default:
		r.fail(key, "%s is not a list of integers (allowed: an integer or a list of integers, e.g. [1, 16])", describe(v))
		return nil
	}
	out := make([]int, len(items))
	for i, it := range items {
		n, ok := AsInt(it)
		if !ok {
			r.fail(key, "entry %d, %s, is not an integer (allowed: a list of integers, e.g. [1, 16])", i, describe(it))
			return nil
		}
		out[i] = n
	}
	return out
}

// stat reads a ternary statistic: a number, or None/"NA" (absent).
func (r *reader) stat(key string) *float64 {
	v, ok := r.get(key, false, "")
	if !ok || v == nil || v == "NA" {
		return nil
	}
	f, ok := toFloat(v)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		r.fail(key, `%s is not a number (allowed: a finite number, None or "NA")`, describe(v))
		return nil
	}
	return &f
}

// AsInt accepts Go integers and integral floats (JSON numbers) that fit
// an int32; ok is false for anything else. Pass and op arguments that
// come from JSON or TOML use it.
func AsInt(v any) (n int, ok bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int8:
		return int(n), true
	case int16:
		return int(n), true
	case int32:
		return int(n), true
	case int64:
		return intIn(float64(n), n == int64(int(n)))
	case uint8:
		return int(n), true
	case uint16:
		return int(n), true
	case uint32:
		return intIn(float64(n), true)
	case uint64:
		return intIn(float64(n), n <= math.MaxInt32)
	case uint:
		return intIn(float64(n), n <= math.MaxInt32)
	case float32:
		return AsInt(float64(n))
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<31 {
			return 0, false
		}
		return int(n), true
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return AsInt(i)
		}
		if f, err := n.Float64(); err == nil {
			return AsInt(f)
		}
	}
	return 0, false
}

// intIn converts an integer that must fit comfortably in 32 bits.
func intIn(f float64, ok bool) (int, bool) {
	if !ok || math.Abs(f) > 1<<31 {
		return 0, false
	}
	return int(f), true
}

// toBool accepts bools and the integers 0 and 1.
func toBool(v any) (bool, bool) {
	if b, ok := v.(bool); ok {
		return b, true
	}
	if n, ok := AsInt(v); ok && (n == 0 || n == 1) {
		return n == 1, true
	}
	return false, false
}

// toFloat accepts Go numbers.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case bool:
		return 0, false
	}
	if i, ok := AsInt(v); ok {
		return float64(i), true
	}
	return 0, false
}

// describe prints a config value for an error message.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return fmt.Sprintf("%q (a string)", x)
	case bool:
		return fmt.Sprintf("%v (a boolean)", x)
	case float64, float32:
		return fmt.Sprintf("%v", x)
	}
	return fmt.Sprintf("%v (%T)", v, v)
}
