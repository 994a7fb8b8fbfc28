package mixedprecision

import (
	"fmt"
	"math"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/quant"
)

// WeightError is what one format at a width does to a model's Linear
// weights, all layers together: the share of weights it sets to zero that
// were not zero, and the relative error ‖q(W) − W‖ / ‖W‖.
type WeightError struct {
	Format string `json:"format"`
	// Zeroed is the share of non-zero weights quantised to exactly 0.
	Zeroed float64 `json:"zeroed"`
	// RelError is the root of Σ(q(w) − w)² over Σw².
	RelError float64 `json:"rel_error"`
	// LargestWeight is the largest |w| of the layers.
	LargestWeight float64 `json:"largest_weight"`
}

// WeightErrors quantises the weights of every Linear-like layer of mg with
// the weight quantiser of each format at width (FormatConfig, integer with
// fracWidth) and measures what each does to them, so a format that
// collapses a model can be told from its grid: a grid whose smallest step
// is above most weights zeroes them. The graph is left unchanged.
func WeightErrors(mg *ir.MaseGraph, formats []string, width, fracWidth int) ([]WeightError, error) {
	layers, err := linearLayers(mg)
	if err != nil {
		return nil, err
	}
	be, err := backend.Default()
	if err != nil {
		return nil, err
	}
	type weight struct {
		vals  []float64
		shape []int
	}
	var ws []weight
	largest := 0.0
	for _, l := range layers {
		vals, shape, err := mg.Model.EffectiveParamData(be, nn.Join(l.node.Target, "weight"))
		if err != nil {
			return nil, fmt.Errorf("mixedprecision: %w", err)
		}
		w := weight{vals: make([]float64, len(vals)), shape: shape}
		for i, v := range vals {
			w.vals[i] = float64(v)
			largest = math.Max(largest, math.Abs(w.vals[i]))
		}
		ws = append(ws, w)
	}
	var out []WeightError
	for _, f := range formats {
		cfg, err := FormatConfig(f, width, fracWidth)
		if err != nil {
			return nil, err
		}
		lc, err := quant.ParseLinearConfig(cfg)
		if err != nil {
			return nil, err
		}
		if lc.Weight == nil {
			return nil, fmt.Errorf("mixedprecision: %s leaves the weights in float", f)
		}
		var nonZero, zeroed int
		var errSq, sq float64
		for _, w := range ws {
			q, err := lc.Weight.Reference(w.vals, w.shape)
			if err != nil {
				return nil, fmt.Errorf("mixedprecision: %s: %w", f, err)
			}
			for i, v := range w.vals {
				if v != 0 {
					nonZero++
					if q[i] == 0 {
						zeroed++
					}
				}
				errSq += (q[i] - v) * (q[i] - v)
				sq += v * v
			}
		}
		r := WeightError{Format: f, LargestWeight: largest}
		if nonZero > 0 {
			r.Zeroed = float64(zeroed) / float64(nonZero)
		}
		if sq > 0 {
			r.RelError = math.Sqrt(errSq / sq)
		}
		out = append(out, r)
	}
	return out, nil
}
