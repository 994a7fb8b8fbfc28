package passes_test

import (
	"slices"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/models"
)

func TestResNet18CommonMetadata(t *testing.T) {
	m, err := models.NewResNet18(1000, 3)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A small image keeps the test fast; the layers do not depend on it.
	mg = withMetadata(t, mg, map[string]*tensors.Tensor{"x": models.RandomImages(1, 1, 32, 32)})
	ops := map[[2]string]int{}
	for _, n := range mg.Graph.Nodes() {
		ops[[2]string{n.Meta.Common.MaseType, n.Meta.Common.MaseOp}]++
	}
	for op, want := range map[[2]string]int{
		{"module_related_func", "conv2d"}: 20, {"module", "batch_norm2d"}: 20, {"module_related_func", "relu"}: 17,
		{"module_related_func", "max_pool2d"}: 1, {"module_related_func", "adaptive_avg_pool2d"}: 1,
		{"builtin_func", "add"}: 8, {"implicit_func", "flatten"}: 1, {"module_related_func", "linear"}: 1,
		{"placeholder", "placeholder"}: 1, {"output", "output"}: 1,
	} {
		if ops[op] != want {
			t.Errorf("%d nodes with %v, want %d (all: %v)", ops[op], op, want, ops)
		}
	}
	// Shapes propagated through the dummy run.
	for name, want := range map[string][]int{
		"conv1": {1, 64, 16, 16}, "maxpool": {1, 64, 8, 8}, "layer2_0_downsample_0": {1, 128, 4, 4},
		"layer4_1_bn2": {1, 512, 1, 1}, "avgpool": {1, 512, 1, 1}, "flatten": {1, 512}, "fc": {1, 1000},
	} {
		r := mg.Graph.Node(name).Meta.Common.Results.Get("data_out_0")
		if r == nil || !slices.Equal(r.Shape, want) {
			t.Errorf("%s: data_out_0 %+v, want shape %v", name, r, want)
		}
	}
	c := mg.Graph.Node("layer1_0_conv1").Meta.Common
	if w := c.Args.Get("weight"); w == nil || !slices.Equal(w.Shape, []int{64, 64, 3, 3}) || !w.IsParam {
		t.Errorf("layer1_0_conv1 weight arg %+v", w)
	}
	if b := mg.Graph.Node("bn1").Meta.Common.Args.Get("bias"); b == nil || !slices.Equal(b.Shape, []int{1, 64}) {
		t.Errorf("bn1 bias arg %+v (1-D parameters are listed as [1, n])", b)
	}
	if a := mg.Graph.Node("flatten").Meta.Common.Args.Get("start_dim"); a == nil || a.Value != 1 {
		t.Errorf("flatten start_dim %+v", a)
	}
}
