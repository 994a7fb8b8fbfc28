package compress

import (
	"fmt"

	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/train"
	"github.com/gomase/gomase/mase/ui/plot"
)

// IntegerLinearConfig is Tutorial 3's config: every Linear as
// LinearInteger with the same width and fractional width for data, weight
// and bias, everything else left in float.
func IntegerLinearConfig(width, fracWidth int) passes.QuantizeArgs {
	return passes.QuantizeByType("linear", map[string]any{"name": "integer",
		"data_in_width": float64(width), "data_in_frac_width": float64(fracWidth),
		"weight_width": float64(width), "weight_frac_width": float64(fracWidth),
		"bias_width": float64(width), "bias_frac_width": float64(fracWidth)})
}

// PTQ loads the checkpoint, quantizes it with args and evaluates it.
func (s *Session) PTQ(args passes.QuantizeArgs) (*ir.MaseGraph, float64, error) {
	return s.transformAndEvaluate(func(mg *ir.MaseGraph) (*ir.MaseGraph, error) {
		mg, _, err := passes.QuantizeTransform(mg, args)
		return mg, err
	})
}

// transformAndEvaluate loads the checkpoint, applies transform and
// evaluates the result.
func (s *Session) transformAndEvaluate(transform func(*ir.MaseGraph) (*ir.MaseGraph, error)) (*ir.MaseGraph, float64, error) {
	mg, err := s.Load()
	if err != nil {
		return nil, 0, err
	}
	if mg, err = transform(mg); err != nil {
		return nil, 0, err
	}
	m, err := s.Evaluate(mg)
	if err != nil {
		return nil, 0, err
	}
	return mg, m.Accuracy, nil
}

// QAT continues training a quantized graph (straight-through gradients)
// and evaluates it again.
func (s *Session) QAT(mg *ir.MaseGraph, title string) (float64, error) {
	return s.trainAndEvaluate(mg, title, s.Progress)
}

// trainAndEvaluate fine-tunes mg and returns its test accuracy.
func (s *Session) trainAndEvaluate(mg *ir.MaseGraph, title string, makeProgress func(string) train.Progress) (float64, error) {
	if _, err := s.fineTune(mg, title, makeProgress); err != nil {
		return 0, err
	}
	m, err := s.Evaluate(mg)
	return m.Accuracy, err
}

// WidthPoint is one width of Lab 1 Task 1's sweep.
type WidthPoint struct {
	Width     int     `json:"width"`
	FracWidth int     `json:"frac_width"`
	PTQ       float64 `json:"ptq_accuracy"`
	QAT       float64 `json:"qat_accuracy"`
}

// WidthSweep runs PTQ then QAT at every width with frac = width/2, each
// from a fresh copy of the checkpoint. each, when set, sees every point as
// it is done.
func (s *Session) WidthSweep(widths []int, each func(WidthPoint)) ([]WidthPoint, error) {
	return s.widthSweep(widths, each, nil)
}

// WidthSweepBest is WidthSweep that also exports the QAT model of the best
// width (BestWidth) to the checkpoint base best: Lab 1 Task 2 prunes the
// model Task 1 found best. It returns the points and the best one.
func (s *Session) WidthSweepBest(widths []int, best string, each func(WidthPoint)) ([]WidthPoint, WidthPoint, error) {
	var top WidthPoint
	found := false
	points, err := s.widthSweep(widths, each, func(p WidthPoint, mg *ir.MaseGraph) error {
		if found && !betterWidth(p, top) {
			return nil
		}
		top, found = p, true
		return checkpoint.Export(best, mg, checkpoint.Spec{})
	})
	if err != nil {
		return nil, WidthPoint{}, err
	}
	if !found {
		return nil, WidthPoint{}, fmt.Errorf("width sweep: no widths")
	}
	return points, top, nil
}

// BestWidth is the point Lab 1 Task 2 starts from: the highest accuracy
// after QAT, the narrower width on a tie (the same accuracy for fewer
// bits). ok is false for no points.
func BestWidth(points []WidthPoint) (best WidthPoint, ok bool) {
	for i, p := range points {
		if i == 0 || betterWidth(p, best) {
			best = p
		}
	}
	return best, len(points) > 0
}

// betterWidth reports whether p beats q as BestWidth ranks them.
func betterWidth(p, q WidthPoint) bool {
	return p.QAT > q.QAT || p.QAT == q.QAT && p.Width < q.Width
}

// widthSweep is WidthSweep; keep, when set, sees every point's QAT model.
func (s *Session) widthSweep(widths []int, each func(WidthPoint), keep func(WidthPoint, *ir.MaseGraph) error) ([]WidthPoint, error) {
	var out []WidthPoint
	for _, w := range widths {
		if w < 2 || w > 32 {
			return nil, fmt.Errorf("width sweep: width %d out of range (allowed: 2..32)", w)
		}
		p := WidthPoint{Width: w, FracWidth: w / 2}
		var mg *ir.MaseGraph
		err := s.Quietly(func() (err error) {
			mg, p.PTQ, err = s.PTQ(IntegerLinearConfig(p.Width, p.FracWidth))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("width %d PTQ: %w", w, err)
		}
		if p.QAT, err = s.trainAndEvaluate(mg, fmt.Sprintf("QAT, width %d", w), s.SweepProgress); err != nil {
			return nil, fmt.Errorf("width %d QAT: %w", w, err)
		}
		if keep != nil {
			if err := keep(p, mg); err != nil {
				return nil, fmt.Errorf("width %d: %w", w, err)
			}
		}
		out = append(out, p)
		if each != nil {
			each(p)
		}
	}
	return out, nil
}

// WidthChart plots PTQ and QAT accuracy against the width, with the float
// baseline as a flat line.
func WidthChart(points []WidthPoint, baseline float64) plot.Chart {
	ptq, qat, base := plot.Series{Name: "PTQ"}, plot.Series{Name: "QAT"}, plot.Series{Name: "float32 baseline"}
	for _, p := range points {
		x := float64(p.Width)
		ptq.X, ptq.Y = append(ptq.X, x), append(ptq.Y, p.PTQ)
		qat.X, qat.Y = append(qat.X, x), append(qat.Y, p.QAT)
		base.X, base.Y = append(base.X, x), append(base.Y, baseline)
	}
	return plot.Chart{Title: "Fixed-point width sweep (frac = width/2)", XLabel: "width (bits)", YLabel: "test accuracy",
		Series: []plot.Series{ptq, qat, base}, Points: true}
}
