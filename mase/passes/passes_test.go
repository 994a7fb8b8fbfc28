package passes_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
)

// dummyIDs are spec §1.2's token ids of the two dummy sentences.
var dummyIDs = [][]int32{
	{101, 9932, 2089, 2202, 2058, 1996, 2088, 2028, 2154, 102},
	{101, 2023, 2003, 2339, 2017, 2323, 4553, 4748, 4877, 102},
}

func bertGraph(t *testing.T, inputs []string) *ir.MaseGraph {
	t.Helper()
	m, err := models.NewBertTiny(7)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, inputs)
	if err != nil {
		t.Fatal(err)
	}
	return mg
}

func withMetadata(t *testing.T, mg *ir.MaseGraph, dummy map[string]*tensors.Tensor) *ir.MaseGraph {
	t.Helper()
	mg, _, err := passes.InitMetadata(mg)
	if err != nil {
		t.Fatal(err)
	}
	mg, _, err = passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: dummy})
	if err != nil {
		t.Fatal(err)
	}
	return mg
}

func TestBertCommonMetadata(t *testing.T) {
	mg := withMetadata(t, bertGraph(t, nil), map[string]*tensors.Tensor{"input_ids": tensors.FromValue(dummyIDs)})
	n := mg.Graph.Node("bert_encoder_layer_0_intermediate_dense")
	if n == nil {
		t.Fatal("no intermediate dense node")
	}
	c := n.Meta.Common
	if c.MaseType != "module_related_func" || c.MaseOp != "linear" {
		t.Errorf("mase_type/op = %s/%s", c.MaseType, c.MaseOp)
	}
	want := map[string][]int{"data_in_0": {2, 10, 128}, "weight": {512, 128}, "bias": {1, 512}}
	for k, shape := range want {
		a := c.Args.Get(k)
		if a == nil || !slices.Equal(a.Shape, shape) || a.Type != "float" || !slices.Equal(a.Precision, []int{32}) {
			t.Errorf("args[%s] = %+v, want shape %v float [32]", k, a, shape)
		}
	}
	if got := strings.Join(c.Args.Keys(), ","); got != "data_in_0,weight,bias" {
		t.Errorf("arg order %s", got)
	}
	if r := c.Results.Get("data_out_0"); r == nil || !slices.Equal(r.Shape, []int{2, 10, 512}) {
		t.Errorf("data_out_0 = %+v", r)
	}
	// Operator inference for the other node kinds.
	for name, op := range map[string][2]string{
		"input_ids": {"placeholder", "placeholder"}, "size": {"implicit_func", "size"},
		"ones": {"implicit_func", "ones"}, "add": {"builtin_func", "add"},
		"bert_embeddings_word_embeddings":                       {"implicit_func", "embedding"},
		"bert_embeddings_dropout":                               {"module_related_func", "dropout"},
		"bert_encoder_layer_0_intermediate_intermediate_act_fn": {"module_related_func", "gelu"},
		"scaled_dot_product_attention":                          {"builtin_func", "scaled_dot_product_attention"},
		"getitem":                                               {"builtin_func", "getitem"},
		"output":                                                {"output", "output"},
	} {
		n := mg.Graph.Node(name)
		if n == nil {
			t.Errorf("no node %s", name)
			continue
		}
		if got := [2]string{n.Meta.Common.MaseType, n.Meta.Common.MaseOp}; got != op {
			t.Errorf("%s: %v, want %v", name, got, op)
		}
	}
	if mg.Graph.Node("output").Meta.Common.Args.Get("data_in_0") == nil {
		t.Error("output node has no data_in_0")
	}
}

func TestAddCommonMetadataErrors(t *testing.T) {
	mg := bertGraph(t, nil)
	if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{}); err == nil || !strings.Contains(err.Error(), "dummy_in") {
		t.Errorf("missing dummy_in: %v", err)
	}
	if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: map[string]*tensors.Tensor{}}); err == nil || !strings.Contains(err.Error(), "InitMetadata") {
		t.Errorf("without InitMetadata: %v", err)
	}
	mg, _, _ = passes.InitMetadata(mg)
	_, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: map[string]*tensors.Tensor{"ids": tensors.FromValue(dummyIDs)}})
	if err == nil || !strings.Contains(err.Error(), "input_ids") {
		t.Errorf("wrong input name: %v", err)
	}
}

func TestDropoutCountEraseAndRemove(t *testing.T) {
	mg := bertGraph(t, nil)
	_, info, err := passes.CountDropout(mg)
	if err != nil {
		t.Fatal(err)
	}
	wantMods := []string{"bert.embeddings.dropout", "bert.encoder.layer.0.attention.output.dropout", "bert.encoder.layer.0.output.dropout",
		"bert.encoder.layer.1.attention.output.dropout", "bert.encoder.layer.1.output.dropout", "dropout"}
	if info["dropout_count"] != 6 || !slices.Equal(info["dropout_modules"].([]string), wantMods) {
		t.Fatalf("count = %v %v", info["dropout_count"], info["dropout_modules"])
	}

	// The tutorial's task: erasing without rewiring fails, naming the users.
	d := mg.Graph.Node("bert_embeddings_dropout")
	err = mg.Graph.EraseNode(d)
	var ee *ir.EraseError
	if !errors.As(err, &ee) {
		t.Fatalf("erase: %v", err)
	}
	for _, u := range []string{"bert_encoder_layer_0_attention_self_query", "bert_encoder_layer_0_attention_self_key",
		"bert_encoder_layer_0_attention_self_value", "add_2"} {
		if !slices.Contains(ee.Users, u) {
			t.Errorf("erase error does not name %s: %v", u, err)
		}
	}

	ids := map[string]*tensors.Tensor{"input_ids": tensors.FromValue(dummyIDs)}
	before, err := execute.Run(mg, ids)
	if err != nil {
		t.Fatal(err)
	}
	mg, info, err = passes.RemoveDropout(mg)
	if err != nil {
		t.Fatal(err)
	}
	if len(info["removed"].([]string)) != 6 {
		t.Errorf("removed %v", info["removed"])
	}
	if _, info, _ = passes.CountDropout(mg); info["dropout_count"] != 0 {
		t.Errorf("count after removal = %v", info["dropout_count"])
	}
	if err := mg.Graph.Lint(); err != nil {
		t.Fatal(err)
	}
	after, err := execute.Run(mg, ids)
	if err != nil {
		t.Fatal(err)
	}
	a, b := tensors.MustCopyFlatData[float32](before[0]), tensors.MustCopyFlatData[float32](after[0])
	if len(a) != 4 || !slices.Equal(a, b) {
		t.Errorf("logits changed: %v → %v", a, b)
	}
}

func TestBertTopologyFollowsInputs(t *testing.T) {
	plain := bertGraph(t, nil)
	full := bertGraph(t, []string{"input_ids", "attention_mask", "labels"})
	has := func(mg *ir.MaseGraph, name string) bool { return mg.Graph.Node(name) != nil }
	for _, n := range []string{"labels", "attention_mask", "crossentropyloss_0"} {
		if has(plain, n) {
			t.Errorf("input_ids-only graph has %s", n)
		}
		if !has(full, n) {
			t.Errorf("full graph lacks %s", n)
		}
	}
	if !has(plain, "ones") || has(full, "ones") {
		t.Error("the default mask of ones must appear only without attention_mask")
	}
	if _, err := mase.NewMaseGraph(plain.Model, []string{"input_ids", "token_ids"}); err == nil || !strings.Contains(err.Error(), "allowed: input_ids, attention_mask, labels") {
		t.Errorf("unknown input: %v", err)
	}
	// (loss, logits) output, loss near ln 2 for a fresh 2-label head.
	mask := [][]int32{make([]int32, 10), make([]int32, 10)}
	for i := range mask {
		for j := range mask[i] {
			mask[i][j] = 1
		}
	}
	out, err := execute.Run(full, map[string]*tensors.Tensor{"input_ids": tensors.FromValue(dummyIDs),
		"attention_mask": tensors.FromValue(mask), "labels": tensors.FromValue([]int32{1, 0})})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("got %d outputs, want (loss, logits)", len(out))
	}
	loss := tensors.MustCopyFlatData[float32](out[0])[0]
	if math.Abs(float64(loss)-math.Ln2) > 0.1 {
		t.Errorf("initial loss %v, want ≈ ln 2", loss)
	}
}
