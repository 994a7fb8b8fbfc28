package quantized_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/internal/modeltest"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/quantized"
	"github.com/gomase/gomase/mase/quant"
)

// qlRun is one forward (and backward of Σ y) through a QuantizedLinear.
type qlRun struct {
	y      []float64
	dx     []float64
	grads  map[string][]float64 // by parameter name
	params map[string][]float64
}

// runQuantized builds a model holding l at "fc", runs it on x and returns
// the output, ∂Σy/∂x and ∂Σy/∂parameter for the trainable parameters.
func runQuantized(t *testing.T, l *quantized.Linear, x []float32, shape []int, training bool) qlRun {
	t.Helper()
	return runQuantizedWith(t, l, x, shape, training, nil)
}

// runQuantizedWith is runQuantized with some parameters set first.
func runQuantizedWith(t *testing.T, l *quantized.Linear, x []float32, shape []int, training bool, set map[string][]float32) qlRun {
	t.Helper()
	m, err := nn.NewModel(&nn.Container{Type: "Root", Kids: []nn.Named{{Name: "fc", Module: l}}}, 9)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range set {
		variable := m.Store.GetVariable(nn.StorePath("fc." + name))
		if err := variable.SetValue(tensors.FromFlatDataAndDimensions(v, variable.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
	}
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Params() {
		if !p.Frozen {
			names = append(names, p.Name)
		}
	}
	var fwdErr error
	exec, err := model.NewExec(be, m.Store, func(scope *model.Scope, xn *graph.Node) []*graph.Node {
		g := xn.Graph()
		call := &nn.Call{Graph: g, Scope: m.Scope("fc"), Path: "fc", Training: training}
		if training {
			call.Random = func(dims ...int) *graph.Node {
				return m.Store.RandomUniform(g, shapes.Make(dtypes.Float32, dims...))
			}
		}
		out, err := l.Forward(call, []any{xn}, nil)
		if err != nil {
			fwdErr = err
			return []*graph.Node{xn}
		}
		y := out.(*graph.Node)
		wrt := []*graph.Node{xn}
		for _, n := range names {
			wrt = append(wrt, m.Store.GetVariable(nn.StorePath("fc."+n)).NodeValue(g))
		}
		return append([]*graph.Node{y}, graph.Gradient(graph.ReduceAllSum(y), wrt...)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Exec(tensors.FromFlatDataAndDimensions(x, shape...))
	if fwdErr != nil {
		t.Fatalf("%s forward: %v", l.TypeName(), fwdErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := qlRun{y: f64(res[0]), dx: f64(res[1]), grads: map[string][]float64{}, params: map[string][]float64{}}
	for i, n := range names {
		r.grads[n] = f64(res[2+i])
	}
	for _, p := range l.Params() {
		v, _, err := m.ParamValues("fc." + p.Name)
		if err != nil {
			t.Fatal(err)
		}
		r.params[p.Name] = widen(v)
	}
	return r
}

func f64(t *tensors.Tensor) []float64 { return widen(tensors.MustCopyFlatData[float32](t)) }

func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func randInput(seed uint64, n int, scale float64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32((2*rng.Float64() - 1) * scale)
	}
	return x
}

// refLinear is y = x Wᵀ + b in float64 for x [rows, in], W [out, in].
func refLinear(x, w, b []float64, in, out int) []float64 {
	rows := len(x) / in
	y := make([]float64, rows*out)
	for r := range rows {
		for o := range out {
			s := 0.0
			for i := range in {
				s += x[r*in+i] * w[o*in+i]
			}
			if b != nil {
				s += b[o]
			}
			y[r*out+o] = s
		}
	}
	return y
}

func mustRef(t *testing.T, s *quant.Spec, x []float64, shape []int) []float64 {
	t.Helper()
	if s == nil {
		return x
	}
	q, err := s.Reference(x, shape)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func parse(t *testing.T, cfg map[string]any) quant.LinearConfig {
	t.Helper()
	c, err := quant.ParseLinearConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestQuantizedLinearIntegerMatchesReference is acceptance 21 (first
// half): LinearInteger 8/4 computes F.linear(Q(x), Q(W), Q(b)), and its
// gradients are straight-through.
func TestQuantizedLinearIntegerMatchesReference(t *testing.T) {
	cfg := parse(t, map[string]any{"name": "integer", "data_in_width": 8, "data_in_frac_width": 4,
		"weight_width": 8, "weight_frac_width": 4, "bias_width": 8, "bias_frac_width": 4})
	const in, out = 6, 4
	l, err := quantized.NewLinear(in, out, true, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.TypeName() != "LinearInteger" || l.ExtraRepr() != "in_features=6, out_features=4, bias=True" {
		t.Errorf("printout %s(%s)", l.TypeName(), l.ExtraRepr())
	}
	if ty, op := l.MaseOp(); ty != "module_related_func" || op != "linear" {
		t.Errorf("MaseOp = %s, %s", ty, op)
	}
	shape := []int{2, 3, in}
	x := randInput(1, 2*3*in, 3)
	r := runQuantized(t, l, x, shape, true)
	q := func(v []float64) []float64 {
		o := make([]float64, len(v))
		for i, a := range v {
			o[i] = quant.QuantizeInteger(a, 8, 4)
		}
		return o
	}
	qx := q(widen(x))
	want := refLinear(qx, q(r.params["weight"]), q(r.params["bias"]), in, out)
	for i := range want {
		if r.y[i] != want[i] { // 8-bit products and sums are exact in float32
			t.Fatalf("y[%d] = %v, want linear(Q(x), Q(W), Q(b)) = %v", i, r.y[i], want[i])
		}
	}
	// The quantisation is visible: plain float linear differs.
	if plain := refLinear(widen(x), r.params["weight"], r.params["bias"], in, out); reflect.DeepEqual(plain, want) {
		t.Error("quantised output equals the float output")
	}
	// STE: ∂Σy/∂W[o,i] = Σ_rows Q(x)[i], ∂Σy/∂b = rows, ∂Σy/∂x[i] = Σ_o Q(W)[o,i].
	rows := len(qx) / in
	qw := q(r.params["weight"])
	for o := range out {
		for i := range in {
			s := 0.0
			for row := range rows {
				s += qx[row*in+i]
			}
			if g := r.grads["weight"][o*in+i]; math.Abs(g-s) > 1e-5 {
				t.Fatalf("∂/∂W[%d,%d] = %v, want %v", o, i, g, s)
			}
		}
		if g := r.grads["bias"][o]; g != float64(rows) {
			t.Fatalf("∂/∂b[%d] = %v, want %d", o, g, rows)
		}
	}
	for row := range rows {
		for i := range in {
			s := 0.0
			for o := range out {
				s += qw[o*in+i]
			}
			if g := r.dx[row*in+i]; math.Abs(g-s) > 1e-5 {
				t.Fatalf("∂/∂x[%d,%d] = %v, want %v", row, i, g, s)
			}
		}
	}
	// data_out quantises the output.
	cfg.DataOut = &quant.Spec{Format: quant.Integer, Width: 6, FracWidth: 1}
	l2, err := quantized.NewLinear(in, out, true, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r2 := runQuantized(t, l2, x, shape, false)
	for i := range want {
		if w := quant.QuantizeInteger(want[i], 6, 1); r2.y[i] != w {
			t.Fatalf("data_out: y[%d] = %v, want %v", i, r2.y[i], w)
		}
	}
}

// classConfigs has a config per Linear name, for the forward test.
func classConfigs() map[string]map[string]any {
	blk := func(prefix string, m map[string]any, extra map[string]any) map[string]any {
		for k, v := range extra {
			m[prefix+k] = v
		}
		return m
	}
	three := func(name string, kv map[string]any) map[string]any {
		m := map[string]any{"name": name}
		for _, op := range []string{"data_in_", "weight_", "bias_"} {
			blk(op, m, kv)
		}
		return m
	}
	bfp := three("block_fp", map[string]any{"width": 6, "exponent_width": 8, "block_size": []any{1, 8}})
	bfp["bias_block_size"] = []any{8}
	bmf := three("block_minifloat", map[string]any{"width": 8, "exponent_width": 4, "exponent_bias_width": 4, "block_size": []any{1, 8}})
	bmf["bias_block_size"] = 8
	blg := three("block_log", map[string]any{"width": 6, "exponent_bias_width": 6, "block_size": []any{1, 8}})
	blg["bias_block_size"] = 8
	bsc := three("binary_scaling", map[string]any{"stochastic": false, "bipolar": true})
	bsc["binary_training"] = true
	return map[string]map[string]any{
		"integer":          three("integer", map[string]any{"width": 8, "frac_width": 4}),
		"fixed":            three("fixed", map[string]any{"width": 6, "frac_width": 3}),
		"minifloat_ieee":   three("minifloat_ieee", map[string]any{"width": 8, "exponent_width": 4}),
		"minifloat_denorm": three("minifloat_denorm", map[string]any{"width": 8, "exponent_width": 4}),
		"log":              three("log", map[string]any{"width": 6}),
		"block_fp":         bfp,
		"block_minifloat":  bmf,
		"block_log":        blg,
		"binary":           {"name": "binary", "weight_stochastic": false, "weight_bipolar": true},
		"binary_scaling":   bsc,
		"binary_residual": {"name": "binary_residual", "data_in_stochastic": false, "weight_stochastic": false,
			"data_in_bipolar": true, "weight_bipolar": true, "binary_training": true},
		"ternary": {"name": "ternary", "weight_scaling_factor": true},
		"mxint8":  {"name": "mxint8", "weight_group_size": 32, "data_in_group_size": 16, "bias_group_size": 8},
	}
}

// TestQuantizedLinearEveryClass runs every class against linear(Q(x),
// Q(W), Q(b)) built from the reference quantisers, and checks that
// gradients reach the weight and the bias.
func TestQuantizedLinearEveryClass(t *testing.T) {
	const in, out = 16, 8
	shape := []int{2, 3, in}
	x := randInput(2, 2*3*in, 2)
	for name, raw := range classConfigs() {
		t.Run(name, func(t *testing.T) {
			cfg := parse(t, raw)
			l, err := quantized.NewLinear(in, out, true, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := quant.LinearTypeName(name)
			if l.TypeName() != want {
				t.Errorf("TypeName %s, want %s", l.TypeName(), want)
			}
			r := runQuantized(t, l, x, shape, false)
			xs := widen(x)
			var y []float64
			switch name {
			case "binary_residual":
				means := r.params["means"]
				xe := make([]float64, len(xs))
				for i, v := range xs {
					xe[i] = quant.QuantizeResidualSign(v, means)
				}
				w := mustRef(t, cfg.Weight, r.params["weight"], []int{out, in})
				for i := range w {
					w[i] *= math.Abs(r.params["gamma"][0]) * r.params["pruning_masks"][i]
				}
				y = refLinear(xe, w, r.params["bias"], in, out)
				if !reflect.DeepEqual(means, []float64{float64(float32(2.0 / 3)), float64(float32(1.0 / 3))}) || r.params["gamma"][0] != 1 {
					t.Errorf("means %v gamma %v, want MASE's [2/3, 1/3] and 1", means, r.params["gamma"])
				}
				for _, p := range []string{"means", "gamma"} {
					if nonzero(r.grads[p]) == 0 {
						t.Errorf("no gradient reaches %s", p)
					}
				}
				if _, ok := r.grads["pruning_masks"]; ok {
					t.Error("pruning_masks is trainable; MASE's has requires_grad=False")
				}
			default:
				y = refLinear(mustRef(t, cfg.DataIn, xs, shape), mustRef(t, cfg.Weight, r.params["weight"], []int{out, in}),
					mustRef(t, cfg.Bias, r.params["bias"], []int{out}), in, out)
			}
			for i := range y {
				if math.Abs(r.y[i]-y[i]) > 1e-4*math.Max(1, math.Abs(y[i])) {
					t.Fatalf("y[%d] = %v, want %v", i, r.y[i], y[i])
				}
			}
			if nonzero(r.grads["weight"]) == 0 || nonzero(r.grads["bias"]) != out {
				t.Errorf("gradients: weight %d non-zero, bias %d non-zero (want all %d)", nonzero(r.grads["weight"]), nonzero(r.grads["bias"]), out)
			}
			// Train mode (random source present) runs too.
			runQuantized(t, l, x, shape, true)
			// The module survives a checkpoint: kind + JSON config.
			kind, js, err := nn.EncodeModule(l)
			if err != nil {
				t.Fatal(err)
			}
			back, err := nn.DecodeModule(kind, js)
			if err != nil {
				t.Fatalf("decode %s %s: %v", kind, js, err)
			}
			if !reflect.DeepEqual(back, l) {
				t.Errorf("round trip %s gave %+v, want %+v", js, back, l)
			}
		})
	}
}

func nonzero(v []float64) int {
	n := 0
	for _, x := range v {
		if x != 0 {
			n++
		}
	}
	return n
}

// TestQuantizedLinearBinaryModes: stochastic binarisation is the sign in
// eval mode; binary_scaling without binary_training clamps the weight.
func TestQuantizedLinearBinaryModes(t *testing.T) {
	const in, out = 8, 4
	shape := []int{3, in}
	x := randInput(3, 3*in, 1)
	det := parse(t, map[string]any{"name": "binary", "weight_stochastic": false, "weight_bipolar": true})
	sto := parse(t, map[string]any{"name": "binary", "weight_stochastic": true, "weight_bipolar": true})
	ld, _ := quantized.NewLinear(in, out, true, det)
	ls, _ := quantized.NewLinear(in, out, true, sto)
	rd, rs := runQuantized(t, ld, x, shape, false), runQuantized(t, ls, x, shape, false)
	if !reflect.DeepEqual(rd.y, rs.y) {
		t.Errorf("stochastic binary in eval mode %v ≠ deterministic %v", rs.y, rd.y)
	}
	// binary_scaling, binary_training false: float linear with W clamped.
	cfg := parse(t, map[string]any{"name": "binary_scaling", "data_in_stochastic": false, "data_in_bipolar": true,
		"weight_stochastic": false, "weight_bipolar": true, "bias_stochastic": false, "bias_bipolar": true, "binary_training": false})
	l, _ := quantized.NewLinear(in, out, true, cfg)
	big := randInput(4, in*out, 3) // many beyond ±1
	r := runQuantizedWith(t, l, x, shape, false, map[string][]float32{"weight": big})
	wc := make([]float64, len(big))
	for i, v := range big {
		wc[i] = math.Max(-1, math.Min(1, float64(v)))
	}
	y := refLinear(widen(x), wc, r.params["bias"], in, out)
	for i := range y {
		if math.Abs(r.y[i]-y[i]) > 1e-5 {
			t.Fatalf("y[%d] = %v, want linear(x, clamp(W, -1, 1), b) = %v", i, r.y[i], y[i])
		}
	}
	if nonzero(r.grads["weight"]) != in*out {
		t.Errorf("clamped weights must still get gradients (straight-through): %d of %d non-zero", nonzero(r.grads["weight"]), in*out)
	}
}

// TestQuantizedLinearReplacesLinear: a Linear's weight and bias copy into a
// QuantizedLinear by name (what the quantize pass does).
func TestQuantizedLinearReplacesLinear(t *testing.T) {
	m, err := nn.NewModel(&nn.Container{Type: "Root", Kids: []nn.Named{{Name: "fc", Module: nn.NewLinear(4, 2, true)}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]*tensors.Tensor{}
	for _, p := range []string{"weight", "bias"} {
		v := m.Store.GetVariable(nn.StorePath("fc." + p))
		tv, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		c, err := tv.Clone()
		if err != nil {
			t.Fatal(err)
		}
		values[p] = c
	}
	before, _, _ := m.ParamValues("fc.weight")
	cfg := parse(t, map[string]any{"name": "fixed", "data_in_width": 8, "data_in_frac_width": 4,
		"weight_width": 8, "weight_frac_width": 4, "bias_width": 8, "bias_frac_width": 4})
	q, err := quantized.NewLinear(4, 2, true, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ReplaceModule("fc", q, values, 2); err != nil {
		t.Fatal(err)
	}
	after, _, _ := m.ParamValues("fc.weight")
	if !reflect.DeepEqual(before, after) {
		t.Error("weight not copied")
	}
	if s := m.String(); !strings.Contains(s, "(fc): LinearInteger(in_features=4, out_features=2, bias=True)") {
		t.Errorf("module tree:\n%s", s)
	}
}

func TestQuantizedLinearErrors(t *testing.T) {
	good := parse(t, map[string]any{"name": "mxint8", "weight_group_size": 32})
	if _, err := quantized.NewLinear(5, 3, true, good); err == nil || !strings.Contains(err.Error(), "the weight has 15 elements, not a multiple of mxint8 group_size 32") {
		t.Errorf("mxint8 weight: %v", err)
	}
	if _, err := quantized.NewLinear(0, 3, true, good); err == nil || !strings.Contains(err.Error(), "want in_features and out_features ≥ 1") {
		t.Errorf("zero features: %v", err)
	}
	if _, err := quantized.NewLinear(4, 4, true, quant.LinearConfig{Name: "log"}); err == nil || !strings.Contains(err.Error(), "log config has no data_in quantiser") {
		t.Errorf("empty config: %v", err)
	}
	if _, err := nn.DecodeModule("QuantizedLinear", json.RawMessage(`{"InFeatures":4,"OutFeatures":4,"Bias":true,"Config":{"name":"integer"}}`)); err == nil || !strings.Contains(err.Error(), "integer config has no data_in quantiser") {
		t.Errorf("decode invalid: %v", err)
	}
	// data_in mxint8 with an input whose size the group does not divide.
	cfg := parse(t, map[string]any{"name": "mxint8", "weight_group_size": 8, "data_in_group_size": 32})
	l, err := quantized.NewLinear(8, 4, false, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := nn.NewModel(&nn.Container{Type: "Root", Kids: []nn.Named{{Name: "fc", Module: l}}}, 1)
	g := graph.NewGraph(modeltest.Backend(t), "t")
	xn := graph.Parameter(g, "x", shapes.Make(dtypes.Float32, 3, 8))
	_, err = l.Forward(&nn.Call{Graph: g, Scope: m.Scope("fc"), Path: "fc"}, []any{xn}, nil)
	if err == nil || !strings.Contains(err.Error(), "LinearMXInt8 fc: data_in quantiser: mxint8: 24 elements are not a multiple of group_size 32") {
		t.Errorf("mxint8 input: %v", err)
	}
	xn = graph.Parameter(g, "x2", shapes.Make(dtypes.Float32, 3, 5))
	if _, err = l.Forward(&nn.Call{Graph: g, Scope: m.Scope("fc"), Path: "fc"}, []any{xn}, nil); err == nil || !strings.Contains(err.Error(), "input shape [3 5], want last axis 8") {
		t.Errorf("input shape: %v", err)
	}
}
