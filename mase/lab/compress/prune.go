package compress

import (
	"fmt"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/ui/plot"
)

// PruneConfig is Tutorial 4's pruning config at one sparsity and method:
// weights and activations of every Linear, local scope.
func PruneConfig(sparsity float64, method string, seed uint64) passes.PruneArgs {
	c := &passes.PruneConfig{Sparsity: sparsity, Method: method, Scope: passes.PruneLocal}
	a := *c
	return passes.PruneArgs{Weight: c, Activation: &a, Seed: seed}
}

// Prune loads the checkpoint, prunes it with args and evaluates it.
func (s *Session) Prune(args passes.PruneArgs) (*ir.MaseGraph, float64, error) {
	return s.transformAndEvaluate(func(mg *ir.MaseGraph) (*ir.MaseGraph, error) {
		mg, _, err := passes.PruneTransform(mg, args)
		return mg, err
	})
}

// SparsityPoint is one point of Lab 1 Task 2's sweep.
type SparsityPoint struct {
	Sparsity  float64 `json:"sparsity"`
	Method    string  `json:"method"`
	Pruned    float64 `json:"pruned_accuracy"`
	FineTuned float64 `json:"fine_tuned_accuracy"`
}

// SparsitySweep prunes a fresh copy of the checkpoint at every sparsity
// with every method (PruneConfig), evaluates it, fine-tunes it (the masks
// keep pruned weights at zero) and evaluates again. each, when set, sees
// every point as it is done.
func (s *Session) SparsitySweep(sparsities []float64, methods []string, each func(SparsityPoint)) ([]SparsityPoint, error) {
	var out []SparsityPoint
	for _, sp := range sparsities {
		for _, method := range methods {
			p := SparsityPoint{Sparsity: sp, Method: method}
			var mg *ir.MaseGraph
			err := s.Quietly(func() (err error) {
				mg, p.Pruned, err = s.Prune(PruneConfig(sp, method, s.Batch.Seed))
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("sparsity %g %s: %w", sp, method, err)
			}
			if p.FineTuned, err = s.trainAndEvaluate(mg, fmt.Sprintf("fine-tuning, %s sparsity %g", method, sp), s.SweepProgress); err != nil {
				return nil, fmt.Errorf("sparsity %g %s: fine-tuning: %w", sp, method, err)
			}
			out = append(out, p)
			if each != nil {
				each(p)
			}
		}
	}
	return out, nil
}

// SparsityChart plots accuracy after fine-tuning against sparsity, one
// line per method, with the unpruned baseline as a flat line; withPruned
// adds the accuracies right after pruning.
func SparsityChart(points []SparsityPoint, baseline float64, withPruned bool) plot.Chart {
	var series []plot.Series
	index := map[string]int{}
	add := func(name string, x, y float64) {
		i, ok := index[name]
		if !ok {
			i = len(series)
			index[name] = i
			series = append(series, plot.Series{Name: name})
		}
		series[i].X, series[i].Y = append(series[i].X, x), append(series[i].Y, y)
	}
	for _, p := range points {
		add(p.Method+", fine-tuned", p.Sparsity, p.FineTuned)
	}
	if withPruned {
		for _, p := range points {
			add(p.Method+", before fine-tuning", p.Sparsity, p.Pruned)
		}
	}
	seen := map[float64]bool{}
	for _, p := range points {
		if !seen[p.Sparsity] {
			seen[p.Sparsity] = true
			add("unpruned baseline", p.Sparsity, baseline)
		}
	}
	return plot.Chart{Title: "Pruning sweep (weights and activations, local)", XLabel: "sparsity", YLabel: "test accuracy",
		Series: series, Points: true}
}
