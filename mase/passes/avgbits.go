package passes

import (
	"fmt"
	"math"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn/quantized"
	"github.com/gomase/gomase/mase/quant"
)

// AvgBits is the average number of bits per element of the Linear layers'
// weights and data inputs, weighted by element counts, in two accountings:
//
//   - MASE's (calculate_avg_bits_mg_analysis_pass): the sum of the format's
//     precision list, so integer 8/4 counts 12 bits and a float layer 32;
//     formats whose list Python cannot sum (a default exponent bias of
//     None, a block-size list) make it unavailable (MASEAvailable false),
//     as they make MASE's pass fail;
//   - the real storage cost (quant.Spec.BitsPerElementFor): integer 8/4 is
//     8 bits, block formats add their shared exponent per block, float is 32.
type AvgBits struct {
	WeightAvgBits float64 `json:"w_avg_bit"`    // MASE's accounting
	DataAvgBits   float64 `json:"data_avg_bit"` // MASE's accounting
	MASEAvailable bool    `json:"mase_available"`
	// WeightStorageBits and DataStorageBits are the real storage costs.
	WeightStorageBits float64 `json:"w_storage_bits"`
	DataStorageBits   float64 `json:"data_storage_bits"`
	WeightElements    int     `json:"w_elements"`
	DataElements      int     `json:"data_elements"`
}

// CalculateAvgBits computes AvgBits over every call_module node whose op
// is linear. It reads the element counts from the common metadata, so
// AddCommonMetadata must have run with a dummy input.
func CalculateAvgBits(mg *ir.MaseGraph) (AvgBits, Info, error) {
	var r AvgBits
	var wMASE, dMASE, wReal, dReal float64
	r.MASEAvailable = true
	for _, n := range mg.Graph.Nodes() {
		if n.Op != ir.CallModule {
			continue
		}
		mod := mustModule(mg, n)
		op, err := nodeOp(n, mod)
		if err != nil || op != "linear" {
			continue
		}
		if n.Meta == nil || n.Meta.Common.Args == nil {
			return r, nil, fmt.Errorf("calculate_avg_bits: node %s has no common metadata: run AddCommonMetadata with a dummy input first", n.Name)
		}
		in, w := n.Meta.Common.Args.Get("data_in_0"), n.Meta.Common.Args.Get("weight")
		if in == nil || w == nil {
			return r, nil, fmt.Errorf("calculate_avg_bits: node %s: metadata has no data_in_0 or weight shape", n.Name)
		}
		inN, wN := elements(in.Shape), elements(w.Shape)
		var dataSpec, weightSpec *quant.Spec
		if q, ok := mod.(*quantized.Linear); ok {
			dataSpec, weightSpec = q.Config.DataIn, q.Config.Weight
		}
		add := func(s *quant.Spec, shape []int, count int, mase, store *float64) error {
			if s == nil {
				*mase += 32 * float64(count)
				*store += 32 * float64(count)
				return nil
			}
			sum, err := s.PrecisionSum()
			if err != nil {
				r.MASEAvailable = false
			}
			*mase += sum * float64(count)
			bits, err := s.BitsPerElementFor(shape)
			if err != nil {
				return fmt.Errorf("calculate_avg_bits: node %s: %w", n.Name, err)
			}
			*store += bits * float64(count)
			return nil
		}
		if err := add(weightSpec, w.Shape, wN, &wMASE, &wReal); err != nil {
			return r, nil, err
		}
		if err := add(dataSpec, in.Shape, inN, &dMASE, &dReal); err != nil {
			return r, nil, err
		}
		r.WeightElements += wN
		r.DataElements += inN
	}
	if r.WeightElements == 0 {
		return r, nil, fmt.Errorf("calculate_avg_bits: the graph has no linear module")
	}
	r.WeightAvgBits, r.DataAvgBits = wMASE/float64(r.WeightElements), dMASE/float64(r.DataElements)
	r.WeightStorageBits, r.DataStorageBits = wReal/float64(r.WeightElements), dReal/float64(r.DataElements)
	if !r.MASEAvailable {
		r.WeightAvgBits, r.DataAvgBits = math.NaN(), math.NaN()
	}
	return r, Info{"w_avg_bit": r.WeightAvgBits, "data_avg_bit": r.DataAvgBits,
		"w_storage_bits": r.WeightStorageBits, "data_storage_bits": r.DataStorageBits}, nil
}

// elements multiplies a shape's dimensions.
func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
