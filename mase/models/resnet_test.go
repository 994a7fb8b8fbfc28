package models

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

func TestResNet18Structure(t *testing.T) {
	m, err := New("resnet18", 1)
	if err != nil {
		t.Fatal(err)
	}
	// torchvision: sum(p.numel() for p in resnet18().parameters()).
	if n := m.NumParameters(""); n != 11689512 {
		t.Errorf("parameters = %d, want 11,689,512", n)
	}
	for path, want := range map[string]int{"conv1": 9408, "layer1": 147968, "layer2": 525568, "layer3": 2099712, "layer4": 8393728, "fc": 513000} {
		if n := m.NumParameters(path); n != want {
			t.Errorf("parameters of %s = %d, want %d", path, n, want)
		}
	}
	convs, bns := 0, 0
	for _, nm := range m.Modules() {
		switch nm.Module.(type) {
		case *nn.Conv2d:
			convs++
		case *nn.BatchNorm2d:
			bns++
		}
	}
	if convs != 20 || bns != 20 {
		t.Errorf("%d Conv2d and %d BatchNorm2d modules, want 20 and 20", convs, bns)
	}
	if b := m.Buffers(); len(b) != 40 || b[0].Name != "bn1.running_mean" || b[39].Name != "layer4.1.bn2.running_var" {
		t.Errorf("%d buffers (%v …), want 40: running_mean and running_var of each BatchNorm2d", len(b), b[0].Name)
	}
	tree := m.String()
	for _, want := range []string{
		"ResNet(\n  (conv1): Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)\n" +
			"  (bn1): BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n" +
			"  (relu): ReLU(inplace=True)\n" +
			"  (maxpool): MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)\n" +
			"  (layer1): Sequential(\n    (0): BasicBlock(\n",
		"    (0): BasicBlock(\n      (conv1): Conv2d(64, 128, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)",
		"      (downsample): Sequential(\n        (0): Conv2d(64, 128, kernel_size=(1, 1), stride=(2, 2), bias=False)\n" +
			"        (1): BatchNorm2d(128, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n      )",
		"  (avgpool): AdaptiveAvgPool2d(output_size=(1, 1))\n  (fc): Linear(in_features=512, out_features=1000, bias=True)\n)",
	} {
		if !strings.Contains(tree, want) {
			t.Errorf("module tree lacks\n%s\nin\n%s", want, tree)
		}
	}
	if _, ok := m.Module("layer1.0.downsample"); ok {
		t.Error("layer1.0 has a downsample; torchvision's has none (stride 1, 64 → 64)")
	}
	// torchvision's init: conv weights N(0, 2/fan_out), BN 1/0.
	w, _, _ := m.ParamValues("layer3.0.conv2.weight")
	sd := 0.0
	for _, v := range w {
		sd += float64(v) * float64(v)
	}
	sd = math.Sqrt(sd / float64(len(w)))
	if want := math.Sqrt(2.0 / (256 * 9)); math.Abs(sd-want) > 0.02*want {
		t.Errorf("layer3.0.conv2.weight std = %v, want kaiming_normal fan_out %v", sd, want)
	}
	if g, _, _ := m.ParamValues("layer2.1.bn1.weight"); g[7] != 1 {
		t.Errorf("BatchNorm weight %v, want 1", g[7])
	}
	if b, _, _ := m.ParamValues("layer2.1.bn1.bias"); b[7] != 0 {
		t.Errorf("BatchNorm bias %v, want 0", b[7])
	}
	// A config round trip keeps the tree; other head sizes and bad configs.
	js, ok := ConfigOf(m)
	if !ok || string(js) != `{"layers":[2,2,2,2],"num_classes":1000}` {
		t.Errorf("ConfigOf = %s, %v", js, ok)
	}
	small, err := NewFromConfig("resnet18", []byte(`{"num_classes": 10}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := small.NumParameters(""); n != 11689512-513000+5130 {
		t.Errorf("10-class head: %d parameters", n)
	}
	if _, err := NewFromConfig("resnet18", []byte(`{"layers": [2, 0, 2, 2]}`), 1); err == nil || !strings.Contains(err.Error(), "layers[1] = 0") {
		t.Errorf("bad layers: %v", err)
	}
	if _, err := NewResNet18(0, 1); err == nil || !strings.Contains(err.Error(), "num_classes must be positive") {
		t.Errorf("zero classes: %v", err)
	}
}

// tinyResNet is a ResNet with one block per stage and 10 classes: the
// same module kinds and graph shape as ResNet-18, cheaper to run.
func tinyResNet(t *testing.T, seed uint64) *nn.Model {
	t.Helper()
	m, err := NewResNet(ResNetConfig{Layers: [4]int{1, 1, 1, 1}, NumClasses: 10}, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestResNet18GraphAndCompiledRun(t *testing.T) {
	m, err := NewResNet18(1000, 2)
	if err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, n := range g.Nodes() {
		key := string(n.Op)
		switch n.Op {
		case ir.CallModule:
			mod, _ := m.Module(n.Target)
			key = mod.TypeName()
		case ir.CallFunction:
			key = n.Target
		}
		count[key]++
	}
	want := map[string]int{"placeholder": 1, "Conv2d": 20, "BatchNorm2d": 20, "ReLU": 17, "MaxPool2d": 1, "add": 8,
		"AdaptiveAvgPool2d": 1, "flatten": 1, "Linear": 1, "output": 1}
	for k, v := range want {
		if count[k] != v {
			t.Errorf("%d %s nodes, want %d (all: %v)", count[k], k, v, count)
		}
	}
	if len(g.Nodes()) != 71 {
		t.Errorf("%d nodes, want 71", len(g.Nodes()))
	}
	// fx's names: a module called twice gets a suffix; the residual adds
	// take bn2 (or the downsample) and the block input.
	for _, name := range []string{"layer1_0_relu_1", "layer2_0_downsample_0", "layer2_0_downsample_1", "add_7", "flatten", "fc"} {
		if g.Node(name) == nil {
			t.Errorf("graph has no node %s", name)
		}
	}
	add := g.Node("add_2") // layer2.0: bn2 + downsample
	if args := add.Args(); len(args) != 2 || args[0].(*ir.Node).Name != "layer2_0_bn2" || args[1].(*ir.Node).Name != "layer2_0_downsample_1" {
		t.Errorf("add_2 args = %v", add.Args())
	}
	if args := g.Node("flatten").Args(); len(args) != 2 || args[1] != 1 {
		t.Errorf("flatten args = %v, want (avgpool, 1)", args)
	}

	// Compiled execution at a small image size (the net is fully
	// convolutional up to the global average pool).
	run, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := run.Run(map[string]*tensors.Tensor{"x": RandomImages(3, 1, 64, 64)})
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].Shape().Dimensions; !slices.Equal(got, []int{1, 1000}) {
		t.Fatalf("output shape %v, want [1, 1000]", got)
	}
	for i, v := range tensors.MustCopyFlatData[float32](out[0]) {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %d = %v", i, v)
		}
	}
}

func TestResNetLoweringsAndModesAgree(t *testing.T) {
	x := RandomImages(4, 2, 32, 32)
	feed := func(in *tensors.Tensor) map[string]*tensors.Tensor { return map[string]*tensors.Tensor{"x": in} }
	run := func(m *nn.Model, eager bool) []float32 {
		t.Helper()
		g, err := trace.Trace(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		var r execute.Runner
		if eager {
			r, err = execute.NewEager(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
		} else {
			r, err = execute.Compile(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Run(feed(x))
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Shape().Dimensions; !slices.Equal(got, []int{2, 10}) {
			t.Fatalf("output shape %v, want [2, 10]", got)
		}
		return tensors.MustCopyFlatData[float32](out[0])
	}
	// Non-trivial BatchNorm statistics, so that eval mode normalises.
	withStats := func(m *nn.Model) *nn.Model {
		for i, b := range m.Buffers() {
			v, _ := b.Variable.Value()
			vals := tensors.MustCopyFlatData[float32](v)
			for j := range vals {
				if strings.HasSuffix(b.Name, "running_var") {
					vals[j] = 0.5 + float32((i+j)%7)/7
				} else {
					vals[j] = float32((i*j)%5)/10 - 0.2
				}
			}
			if _, err := m.RegisterBuffer(b.Name, tensors.FromFlatDataAndDimensions(vals, v.Shape().Dimensions...)); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	ref := run(withStats(tinyResNet(t, 5)), false)
	native := withStats(tinyResNet(t, 5))
	for _, nm := range native.Modules() {
		switch mod := nm.Module.(type) {
		case *nn.Conv2d:
			mod.Lowering = nn.LowerNative
		case *nn.MaxPool2d:
			mod.Lowering = nn.LowerNative
		}
	}
	for name, got := range map[string][]float32{"native lowering": run(native, false), "eager": run(withStats(tinyResNet(t, 5)), true)} {
		for i := range ref {
			if d := math.Abs(float64(got[i] - ref[i])); d > 1e-4*max(1, math.Abs(float64(ref[i]))) {
				t.Errorf("%s: logit %d = %v, compiled decomposed %v", name, i, got[i], ref[i])
				break
			}
		}
	}
}

func TestResNetTrainModeUpdatesRunningStats(t *testing.T) {
	m := tinyResNet(t, 6)
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{Training: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(map[string]*tensors.Tensor{"x": RandomImages(7, 2, 32, 32)}); err != nil {
		t.Fatal(err)
	}
	// After one step from (0, 1), the input's batch statistics moved the
	// stem's running mean by momentum·mean.
	rm, _, _ := m.ParamValues("bn1.running_mean")
	rv, _, _ := m.ParamValues("layer4.0.bn2.running_var")
	if rm[0] == 0 || rv[0] == 1 {
		t.Errorf("train mode left the running statistics at their initial values: %v, %v", rm[0], rv[0])
	}
}

func TestResNetDummyInput(t *testing.T) {
	m := tinyResNet(t, 1)
	in, err := DummyInput(m, []string{"x"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := in["x"].Shape().Dimensions; !slices.Equal(got, []int{1, 3, 224, 224}) {
		t.Errorf("dummy x %v, want [1, 3, 224, 224]", got)
	}
	again, _ := DummyInput(m, []string{"x"}, 3)
	a, b := tensors.MustCopyFlatData[float32](in["x"]), tensors.MustCopyFlatData[float32](again["x"])
	if a[100] != b[100] {
		t.Error("dummy input is not determined by the seed")
	}
}

// The whole network differentiates on the default backend in train mode
// (decomposed conv and max pool, batch-statistics BatchNorm), and the
// same step moves the running statistics.
func TestResNetGradientsInTrainMode(t *testing.T) {
	m := tinyResNet(t, 8)
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	exec, err := model.NewExec(be, m.Store, func(scope *model.Scope, x *graph.Node) []*graph.Node {
		vals, err := execute.Build(x.Graph(), scope, &ir.MaseGraph{Model: m, Graph: g}, map[string]*graph.Node{"x": x}, execute.Mode{Training: true})
		if err != nil {
			panic(err)
		}
		logits := vals[g.OutputNode()].(*graph.Node)
		loss := graph.ReduceAllSum(graph.Square(logits))
		var wrt []*graph.Node
		names = names[:0]
		for _, p := range m.Parameters() {
			wrt = append(wrt, p.Variable.NodeValue(x.Graph()))
			names = append(names, p.Name)
		}
		return graph.Gradient(loss, wrt...)
	})
	if err != nil {
		t.Fatal(err)
	}
	grads, err := exec.Call(RandomImages(9, 2, 16, 16))
	if err != nil {
		t.Fatal(err)
	}
	for i, gr := range grads {
		norm := 0.0
		for _, v := range tensors.MustCopyFlatData[float32](gr) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("gradient of %s has %v", names[i], v)
			}
			norm += float64(v) * float64(v)
		}
		if norm == 0 {
			t.Errorf("gradient of %s is zero", names[i])
		}
	}
	if rm, _, _ := m.ParamValues("layer1.0.bn2.running_mean"); rm[0] == 0 {
		t.Error("the training step left running_mean at 0")
	}
}
