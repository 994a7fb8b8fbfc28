package passes_test

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/passes"
)

func dummyIn() map[string]*tensors.Tensor {
	return map[string]*tensors.Tensor{"input_ids": tensors.FromValue(dummyIDs)}
}

// Acceptance 22: MASE's average bits on bert-tiny with the dummy input.
func TestCalculateAvgBits(t *testing.T) {
	mg := bertGraph(t, nil)
	if _, _, err := passes.CalculateAvgBits(mg); err == nil {
		t.Error("no metadata: want an error")
	}
	if _, _, err := passes.InitMetadata(mg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: dummyIn()}); err != nil {
		t.Fatal(err)
	}
	int84 := map[string]any{"name": "integer", "data_in_width": 8, "data_in_frac_width": 4,
		"weight_width": 8, "weight_frac_width": 4, "bias_width": 8, "bias_frac_width": 4}
	all, _, err := passes.QuantizeTransform(mg, passes.QuantizeByType("linear", int84))
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := passes.CalculateAvgBits(all)
	if err != nil {
		t.Fatal(err)
	}
	if r.WeightElements != 409856 || r.DataElements != 46592 {
		t.Errorf("elements w %d data %d, want 409856 and 46592", r.WeightElements, r.DataElements)
	}
	if r.WeightAvgBits != 12 || r.DataAvgBits != 12 || !r.MASEAvailable {
		t.Errorf("MASE's w_avg_bit %v data_avg_bit %v, want 12 and 12", r.WeightAvgBits, r.DataAvgBits)
	}
	if r.WeightStorageBits != 8 || r.DataStorageBits != 8 {
		t.Errorf("storage bits %v %v, want 8 and 8", r.WeightStorageBits, r.DataStorageBits)
	}

	// The classifier left in float32.
	mg = bertGraph(t, nil)
	passes.InitMetadata(mg)
	passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: dummyIn()})
	args := passes.QuantizeArgs{By: "regex_name", Entries: []passes.QuantizeEntry{{Key: "classifier", Config: nil}, {Key: ".*dense|.*query|.*key|.*value", Config: int84}}}
	if mg, _, err = passes.QuantizeTransform(mg, args); err != nil {
		t.Fatal(err)
	}
	if r, _, err = passes.CalculateAvgBits(mg); err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.WeightAvgBits-4923392.0/409856) > 1e-12 || math.Abs(r.WeightAvgBits-12.0125) > 5e-5 || math.Abs(r.DataAvgBits-12.1099) > 5e-5 {
		t.Errorf("w_avg_bit %v data_avg_bit %v, want 12.0125 and 12.1099", r.WeightAvgBits, r.DataAvgBits)
	}

	// A minifloat with MASE's default bias (None) cannot be summed by MASE.
	mini := map[string]any{"name": "minifloat_ieee", "data_in_width": 8, "data_in_exponent_width": 4,
		"weight_width": 8, "weight_exponent_width": 4, "bias_width": 8, "bias_exponent_width": 4}
	mg = bertGraph(t, nil)
	passes.InitMetadata(mg)
	passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: dummyIn()})
	if mg, _, err = passes.QuantizeTransform(mg, passes.QuantizeByType("linear", mini)); err != nil {
		t.Fatal(err)
	}
	if r, _, err = passes.CalculateAvgBits(mg); err != nil {
		t.Fatal(err)
	}
	if r.MASEAvailable || !math.IsNaN(r.WeightAvgBits) || r.WeightStorageBits != 8 {
		t.Errorf("minifloat: %+v", r)
	}
}
