package nn_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// dense is a float64 NCHW-style array for the reference computations.
type dense struct {
	dims []int
	v    []float64
}

func randDense(rng *rand.Rand, dims ...int) dense {
	n := 1
	for _, d := range dims {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		// Values exactly representable in float32, so the graph sees the
		// same numbers as the reference.
		v[i] = float64(float32(rng.NormFloat64()))
	}
	return dense{dims, v}
}

func (d dense) tensor() *tensors.Tensor {
	f := make([]float32, len(d.v))
	for i, x := range d.v {
		f[i] = float32(x)
	}
	return tensors.FromFlatDataAndDimensions(f, d.dims...)
}

func (d dense) at4(a, b, c, e int) float64 {
	return d.v[((a*d.dims[1]+b)*d.dims[2]+c)*d.dims[3]+e]
}

// refConv2d is a direct float64 convolution (PyTorch's definition, zero
// padding): out[n,o,p,q] = b[o] + Σ_{c,i,j} x[n, g·C/G + c, p·s − pad + i·dil,
// q·s − pad + j·dil]·w[o,c,i,j]. With r (the output adjoint) it also
// returns the gradients of Σ out·r with respect to x and w.
func refConv2d(x, w dense, b []float64, cfg nn.ConvConfig, r []float64) (out dense, dx, dw []float64) {
	n, c, h, wd := x.dims[0], x.dims[1], x.dims[2], x.dims[3]
	o, cg, kh, kw := w.dims[0], w.dims[1], w.dims[2], w.dims[3]
	g := cfg.Groups
	ho := nn.ConvOutputSize(h, kh, cfg.Stride[0], cfg.Padding[0], cfg.Dilation[0])
	wo := nn.ConvOutputSize(wd, kw, cfg.Stride[1], cfg.Padding[1], cfg.Dilation[1])
	out = dense{[]int{n, o, ho, wo}, make([]float64, n*o*ho*wo)}
	dx, dw = make([]float64, len(x.v)), make([]float64, len(w.v))
	for bn := range n {
		for oc := range o {
			grp := oc / (o / g)
			for p := range ho {
				for q := range wo {
					idx := ((bn*o+oc)*ho+p)*wo + q
					acc := 0.0
					if b != nil {
						acc = b[oc]
					}
					for ci := range cg {
						cin := grp*cg + ci
						for i := range kh {
							for j := range kw {
								hh := p*cfg.Stride[0] - cfg.Padding[0] + i*cfg.Dilation[0]
								ww := q*cfg.Stride[1] - cfg.Padding[1] + j*cfg.Dilation[1]
								if hh < 0 || hh >= h || ww < 0 || ww >= wd {
									continue
								}
								xi := ((bn*c+cin)*h+hh)*wd + ww
								wi := ((oc*cg+ci)*kh+i)*kw + j
								acc += x.v[xi] * w.v[wi]
								if r != nil {
									dx[xi] += r[idx] * w.v[wi]
									dw[wi] += r[idx] * x.v[xi]
								}
							}
						}
					}
					out.v[idx] = acc
				}
			}
		}
	}
	return out, dx, dw
}

// execGraph builds fn over the inputs on the default backend and returns
// its outputs as float64.
func execGraph(t *testing.T, fn func(ins []*graph.Node) []*graph.Node, inputs ...*tensors.Tensor) [][]float64 {
	t.Helper()
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := graph.NewExec(be, fn)
	if err != nil {
		t.Fatal(err)
	}
	args := make([]any, len(inputs))
	for i, in := range inputs {
		args[i] = in
	}
	outs, err := exec.Exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	res := make([][]float64, len(outs))
	for i, o := range outs {
		for _, v := range tensors.MustCopyFlatData[float32](o) {
			res[i] = append(res[i], float64(v))
		}
	}
	return res
}

func closeTo(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*max(1, math.Abs(want[i]))) {
			t.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
			return
		}
	}
}

func TestConv2dMatchesFloat64Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name string
		x, w []int
		bias bool
		cfg  nn.ConvConfig
	}{
		{"stride2_pad1", []int{2, 3, 7, 6}, []int{4, 3, 3, 3}, false, nn.ConvConfig{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 1}},
		{"7x7_stride2_pad3_bias", []int{1, 3, 9, 9}, []int{2, 3, 7, 7}, true, nn.ConvConfig{Stride: [2]int{2, 2}, Padding: [2]int{3, 3}, Dilation: [2]int{1, 1}, Groups: 1}},
		{"1x1_stride2", []int{2, 4, 5, 5}, []int{3, 4, 1, 1}, false, nn.ConvConfig{Stride: [2]int{2, 2}, Dilation: [2]int{1, 1}, Groups: 1}},
		{"groups2_dil2_stride_pad_mixed", []int{2, 4, 8, 7}, []int{6, 2, 3, 2}, true, nn.ConvConfig{Stride: [2]int{1, 2}, Padding: [2]int{2, 0}, Dilation: [2]int{2, 1}, Groups: 2}},
	} {
		x, w := randDense(rng, tc.x...), randDense(rng, tc.w...)
		var b []float64
		ins := []*tensors.Tensor{x.tensor(), w.tensor()}
		if tc.bias {
			bd := randDense(rng, tc.w[0])
			b = bd.v
			ins = append(ins, bd.tensor())
		}
		want, _, _ := refConv2d(x, w, b, tc.cfg, nil)
		r := randDense(rng, want.dims...)
		_, wantDx, wantDw := refConv2d(x, w, b, tc.cfg, r.v)
		for _, low := range []nn.Lowering{nn.LowerNative, nn.LowerDecomposed, nn.LowerAuto} {
			cfg := tc.cfg
			cfg.Lowering = low
			// GoMLX's ConvGeneral gradient rebuilds convolutions with
			// graph.Convolve, which refuses strides and dilations together.
			withGrad := low != nn.LowerNative || tc.name != "groups2_dil2_stride_pad_mixed"
			outs := execGraph(t, func(in []*graph.Node) []*graph.Node {
				var bn *graph.Node
				if tc.bias {
					bn = in[2]
				}
				y, err := nn.Conv2dOp(in[0], in[1], bn, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !withGrad {
					return []*graph.Node{y}
				}
				loss := graph.ReduceAllSum(graph.Mul(y, graph.Const(y.Graph(), r.tensor())))
				return append([]*graph.Node{y}, graph.Gradient(loss, in[0], in[1])...)
			}, ins...)
			what := tc.name + "/" + low.String()
			closeTo(t, what+" output", outs[0], want.v, 1e-5)
			if withGrad {
				closeTo(t, what+" dx", outs[1], wantDx, 1e-5)
				closeTo(t, what+" dw", outs[2], wantDw, 1e-5)
			}
		}
	}
}

func TestConv2dErrors(t *testing.T) {
	be, _ := backend.Default()
	g := graph.NewGraph(be, "errors")
	x := graph.Zeros(g, tensors.FromFlatDataAndDimensions(make([]float32, 2*4*5*5), 2, 4, 5, 5).Shape())
	for _, tc := range []struct {
		w    []int
		cfg  nn.ConvConfig
		want string
	}{
		{[]int{3, 3, 3, 3}, nn.ConvConfig{}, "groups dividing"},
		{[]int{3, 2, 3, 3}, nn.ConvConfig{Groups: 2}, "groups dividing"},
		{[]int{4, 4, 7, 7}, nn.ConvConfig{}, "smaller than the dilated kernel"},
		{[]int{4, 4, 3, 3}, nn.ConvConfig{Padding: [2]int{-1, 0}}, "non-negative padding"},
	} {
		w := graph.Zeros(g, tensors.FromFlatDataAndDimensions(make([]float32, tc.w[0]*tc.w[1]*tc.w[2]*tc.w[3]), tc.w...).Shape())
		if _, err := nn.Conv2dOp(x, w, nil, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("weight %v %+v: error %v, want %q", tc.w, tc.cfg, err, tc.want)
		}
	}
}

// refMaxPool2d is max_pool2d with −∞ padding, in float64, with the
// gradient of Σ out·r (r: nil for none) with respect to x, routed to each
// window's maximum.
func refMaxPool2d(x dense, k, s, p, dil int, r []float64) (dense, []float64) {
	n, c, h, w := x.dims[0], x.dims[1], x.dims[2], x.dims[3]
	ho, wo := nn.ConvOutputSize(h, k, s, p, dil), nn.ConvOutputSize(w, k, s, p, dil)
	out := dense{[]int{n, c, ho, wo}, nil}
	dx := make([]float64, len(x.v))
	for a := range n {
		for b := range c {
			for i := range ho {
				for j := range wo {
					m, arg := math.Inf(-1), -1
					for di := range k {
						for dj := range k {
							hh, ww := i*s-p+di*dil, j*s-p+dj*dil
							if hh >= 0 && hh < h && ww >= 0 && ww < w && x.at4(a, b, hh, ww) > m {
								m, arg = x.at4(a, b, hh, ww), ((a*c+b)*h+hh)*w+ww
							}
						}
					}
					if r != nil {
						dx[arg] += r[len(out.v)]
					}
					out.v = append(out.v, m)
				}
			}
		}
	}
	return out, dx
}

func TestMaxPool2dMatchesFloat64Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ dims, kspd []int }{
		{[]int{2, 3, 8, 7}, []int{3, 2, 1, 1}}, // ResNet's stem pool
		{[]int{1, 2, 9, 9}, []int{2, 2, 0, 1}},
		{[]int{1, 2, 9, 8}, []int{3, 1, 1, 2}},
	} {
		// Shift the values negative so that a zero padding would win.
		x := randDense(rng, tc.dims...)
		for i := range x.v {
			x.v[i] = float64(float32(x.v[i] - 10))
		}
		k, s, p, d := tc.kspd[0], tc.kspd[1], tc.kspd[2], tc.kspd[3]
		want, _ := refMaxPool2d(x, k, s, p, d, nil)
		r := randDense(rng, want.dims...)
		_, wantDx := refMaxPool2d(x, k, s, p, d, r.v)
		for _, low := range []nn.Lowering{nn.LowerNative, nn.LowerDecomposed} {
			// The Go backend lacks SelectAndScatter, the gradient of
			// ReduceWindow(max): only the decomposed pool has one there.
			withGrad := low == nn.LowerDecomposed
			outs := execGraph(t, func(in []*graph.Node) []*graph.Node {
				y, err := nn.MaxPool2dOp(in[0], [2]int{k, k}, [2]int{s, s}, [2]int{p, p}, [2]int{d, d}, low)
				if err != nil {
					t.Fatal(err)
				}
				if !withGrad {
					return []*graph.Node{y}
				}
				loss := graph.ReduceAllSum(graph.Mul(y, graph.Const(y.Graph(), r.tensor())))
				return []*graph.Node{y, graph.Gradient(loss, in[0])[0]}
			}, x.tensor())
			closeTo(t, low.String(), outs[0], want.v, 0)
			if withGrad {
				closeTo(t, low.String()+" dx", outs[1], wantDx, 1e-6)
			}
		}
	}
	// The module and its errors.
	got := runLeaf(t, nn.NewMaxPool2d(3, 2, 1), tensors.FromFlatDataAndDimensions([]float32{-1, -2, -3, -4}, 1, 1, 2, 2))
	if len(got) != 1 || got[0] != -1 {
		t.Errorf("MaxPool2d(3, 2, 1) of a 2×2 input = %v, want [-1]", got)
	}
	if err := (&nn.MaxPool2d{KernelSize: 3, Stride: 2, Padding: 2, Dilation: 1}).Validate(); err == nil || !strings.Contains(err.Error(), "at most half") {
		t.Errorf("padding 2 > 3/2: %v", err)
	}
}

func TestAdaptiveAvgPool2dMatchesFloat64Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := randDense(rng, 2, 3, 5, 7)
	for _, os := range [][2]int{{1, 1}, {2, 3}, {5, 7}, {3, 1}} {
		var want []float64
		for a := range 2 {
			for b := range 3 {
				for i := range os[0] {
					for j := range os[1] {
						h0, h1 := i*5/os[0], int(math.Ceil(float64((i+1)*5)/float64(os[0])))
						w0, w1 := j*7/os[1], int(math.Ceil(float64((j+1)*7)/float64(os[1])))
						s := 0.0
						for hh := h0; hh < h1; hh++ {
							for ww := w0; ww < w1; ww++ {
								s += x.at4(a, b, hh, ww)
							}
						}
						want = append(want, s/float64((h1-h0)*(w1-w0)))
					}
				}
			}
		}
		got := runLeaf(t, nn.NewAdaptiveAvgPool2d(os[0], os[1]), x.tensor())
		g64 := make([]float64, len(got))
		for i, v := range got {
			g64[i] = float64(v)
		}
		closeTo(t, "adaptive_avg_pool2d"+pyPairStr(os), g64, want, 1e-6)
	}
}

func pyPairStr(p [2]int) string {
	return "(" + string(rune('0'+p[0])) + ", " + string(rune('0'+p[1])) + ")"
}

// bnModel is a model whose only leaf is a BatchNorm2d at "bn".
func bnModel(t *testing.T, c int) *nn.Model {
	t.Helper()
	m, err := nn.NewModel(&nn.Container{Type: "Root", Kids: []nn.Named{{Name: "bn", Module: nn.NewBatchNorm2d(c)}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func runBN(t *testing.T, m *nn.Model, x *tensors.Tensor, training bool) []float64 {
	t.Helper()
	g := ir.New()
	in := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	out := g.MustAddNode(ir.CallModule, "", "bn", []any{in}, nil)
	g.MustAddNode(ir.Output, "output", "output", []any{out}, nil)
	run, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{Training: training})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Run(map[string]*tensors.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	var o []float64
	for _, v := range tensors.MustCopyFlatData[float32](res[0]) {
		o = append(o, float64(v))
	}
	return o
}

func TestBatchNorm2d(t *testing.T) {
	const c = 3
	m := bnModel(t, c)
	// Buffers: declared, listed, not parameters.
	if n := m.NumParameters(""); n != 2*c {
		t.Errorf("parameters = %d, want %d (weight and bias only)", n, 2*c)
	}
	var names []string
	for _, b := range m.Buffers() {
		names = append(names, b.Name)
		if b.Variable.Trainable {
			t.Errorf("buffer %s is trainable", b.Name)
		}
	}
	if got := strings.Join(names, ","); got != "bn.running_mean,bn.running_var" {
		t.Errorf("buffers = %s", got)
	}
	if !m.IsDeclaredBuffer("bn.running_var") {
		t.Error("running_var is not reported as declared")
	}
	if got := m.String(); !strings.Contains(got, "(bn): BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)") {
		t.Errorf("module tree:\n%s", got)
	}
	// Non-trivial parameters and statistics.
	rng := rand.New(rand.NewPCG(9, 9))
	w, b := randDense(rng, c), randDense(rng, c)
	rm, rv := randDense(rng, c), randDense(rng, c)
	for i := range rv.v {
		rv.v[i] = math.Abs(rv.v[i]) + 0.5
	}
	for name, d := range map[string]dense{"bn.weight": w, "bn.bias": b} {
		if err := m.Store.GetVariable(nn.StorePath(name)).SetValue(d.tensor()); err != nil {
			t.Fatal(err)
		}
	}
	// RegisterBuffer on a declared buffer sets its value (checkpoint restore).
	if _, err := m.RegisterBuffer("bn.running_mean", rm.tensor()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RegisterBuffer("bn.running_var", rv.tensor()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RegisterBuffer("bn.running_var", tensors.FromValue([]float32{1})); err == nil || !strings.Contains(err.Error(), "the value given is") {
		t.Errorf("wrong-shape restore: %v", err)
	}
	if err := m.RemoveBuffer("bn.running_mean"); err == nil || !strings.Contains(err.Error(), "declared by its module") {
		t.Errorf("RemoveBuffer of a declared buffer: %v", err)
	}

	x := randDense(rng, 2, c, 3, 4)
	per := 3 * 4
	// Eval: running statistics.
	var want []float64
	for n := range 2 {
		for ch := range c {
			for k := range per {
				v := x.v[(n*c+ch)*per+k]
				want = append(want, (v-rm.v[ch])/math.Sqrt(rv.v[ch]+1e-5)*w.v[ch]+b.v[ch])
			}
		}
	}
	closeTo(t, "eval", runBN(t, m, x.tensor(), false), want, 1e-5)

	// Train: batch statistics, and the running ones move by momentum.
	want = want[:0]
	mean, biased := make([]float64, c), make([]float64, c)
	cnt := float64(2 * per)
	for ch := range c {
		for n := range 2 {
			for k := range per {
				mean[ch] += x.v[(n*c+ch)*per+k] / cnt
			}
		}
		for n := range 2 {
			for k := range per {
				d := x.v[(n*c+ch)*per+k] - mean[ch]
				biased[ch] += d * d / cnt
			}
		}
	}
	for n := range 2 {
		for ch := range c {
			for k := range per {
				v := x.v[(n*c+ch)*per+k]
				want = append(want, (v-mean[ch])/math.Sqrt(biased[ch]+1e-5)*w.v[ch]+b.v[ch])
			}
		}
	}
	closeTo(t, "train", runBN(t, m, x.tensor(), true), want, 1e-4)
	gotRM, _, _ := m.ParamValues("bn.running_mean")
	gotRV, _, _ := m.ParamValues("bn.running_var")
	for ch := range c {
		wantRM := 0.9*rm.v[ch] + 0.1*mean[ch]
		wantRV := 0.9*rv.v[ch] + 0.1*biased[ch]*cnt/(cnt-1)
		if math.Abs(float64(gotRM[ch])-wantRM) > 1e-5 || math.Abs(float64(gotRV[ch])-wantRV) > 1e-5 {
			t.Errorf("channel %d: running mean/var = %v/%v, want %v/%v", ch, gotRM[ch], gotRV[ch], wantRM, wantRV)
		}
	}
	// Eval leaves them alone.
	runBN(t, m, x.tensor(), false)
	again, _, _ := m.ParamValues("bn.running_mean")
	if again[0] != gotRM[0] {
		t.Errorf("eval changed running_mean: %v → %v", gotRM[0], again[0])
	}
	// Training needs more than one value per channel.
	one := randDense(rng, 1, c, 1, 1)
	g := ir.New()
	in := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	g.MustAddNode(ir.Output, "output", "output", []any{g.MustAddNode(ir.CallModule, "", "bn", []any{in}, nil)}, nil)
	run, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{Training: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(map[string]*tensors.Tensor{"x": one.tensor()}); err == nil || !strings.Contains(err.Error(), "more than 1 value per channel") {
		t.Errorf("train on 1 value per channel: %v", err)
	}
}

func TestDeclaredBuffersFollowTheirModule(t *testing.T) {
	m := bnModel(t, 2)
	if err := m.ReplaceModule("bn", nn.NewBatchNorm2d(4), nil, 0); err != nil {
		t.Fatal(err)
	}
	v, ok := m.Buffer("bn.running_var")
	if !ok || v.Shape().Dimensions[0] != 4 {
		t.Fatalf("after replacing with BatchNorm2d(4): running_var %v, %v", ok, v)
	}
	if err := m.ReplaceModule("bn", nn.NewIdentity(), nil, 0); err != nil {
		t.Fatal(err)
	}
	if len(m.Buffers()) != 0 || m.Store.GetVariable("/bn/running_mean") != nil {
		t.Errorf("replacing the BatchNorm2d left its buffers: %v", m.Buffers())
	}
	if err := m.AddModule("extra", nn.NewBatchNorm2d(1), 0); err != nil {
		t.Fatal(err)
	}
	if len(m.Buffers()) != 2 {
		t.Errorf("AddModule(BatchNorm2d) buffers: %v", m.Buffers())
	}
}

func TestConvModulesPrintAndRoundTrip(t *testing.T) {
	conv := nn.NewConv2d(3, 64, 7, 2, 3, false)
	grouped := &nn.Conv2d{InChannels: 4, OutChannels: 8, KernelSize: [2]int{3, 1}, Stride: [2]int{1, 1}, Padding: [2]int{0, 0}, Dilation: [2]int{2, 2}, Groups: 2, Bias: true}
	for _, tc := range []struct {
		mod  nn.Module
		want string
	}{
		{conv, "Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)"},
		{grouped, "Conv2d(4, 8, kernel_size=(3, 1), stride=(1, 1), dilation=(2, 2), groups=2)"},
		{nn.NewBatchNorm2d(64), "BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"},
		{nn.NewMaxPool2d(3, 2, 1), "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"},
		{nn.NewAdaptiveAvgPool2d(1, 1), "AdaptiveAvgPool2d(output_size=(1, 1))"},
		{nn.NewReLUInplace(), "ReLU(inplace=True)"},
	} {
		if got := tc.mod.TypeName() + "(" + tc.mod.ExtraRepr() + ")"; got != tc.want {
			t.Errorf("printed %s, want %s", got, tc.want)
		}
		kind, cfg, err := nn.EncodeModule(tc.mod)
		if err != nil {
			t.Fatal(err)
		}
		back, err := nn.DecodeModule(kind, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if kind != "ReLU" && back.ExtraRepr() != tc.mod.ExtraRepr() {
			t.Errorf("%s came back as %s", tc.want, back.ExtraRepr())
		}
	}
	if _, err := nn.DecodeModule("Conv2d", []byte(`{"InChannels":3,"OutChannels":4,"KernelSize":[3,3],"Stride":[1,1],"Dilation":[1,1],"Groups":2}`)); err == nil ||
		!strings.Contains(err.Error(), "groups 2 must be positive and divide") {
		t.Errorf("bad groups: %v", err)
	}
	// PyTorch's default init: U(±1/√fan_in) for weight and bias.
	m, err := nn.NewModel(&nn.Container{Type: "Root", Kids: []nn.Named{{Name: "c", Module: grouped}}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	bound := 1 / math.Sqrt(float64(grouped.FanIn()))
	for _, name := range []string{"c.weight", "c.bias"} {
		v, _, _ := m.ParamValues(name)
		hi := 0.0
		for _, x := range v {
			hi = max(hi, math.Abs(float64(x)))
		}
		if hi > bound || hi < bound/2 {
			t.Errorf("%s: max |value| %v, want within U(±%v)", name, hi, bound)
		}
	}
	if _, shape, _ := m.ParamValues("c.weight"); shape[1] != 2 {
		t.Errorf("grouped weight shape %v, want [8, 2, 3, 1]", shape)
	}
}
