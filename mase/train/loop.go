package train

import (
	"fmt"
	"math"
	"time"
)

// LogEntry is one logged point of training.
type LogEntry struct {
	Step         int     `json:"step"`
	Epoch        float64 `json:"epoch"`
	Loss         float64 `json:"loss"`
	LearningRate float64 `json:"learning_rate"`
	GradNorm     float64 `json:"grad_norm"`
}

// History is what Train returns: the logged losses and the totals.
// Seconds is the whole run; CompileSeconds the part of it spent building
// and compiling the Compiles training executables.
type History struct {
	Log            []LogEntry `json:"log"`
	Steps          int        `json:"steps"`
	Examples       int        `json:"examples"`
	Seconds        float64    `json:"seconds"`
	FinalLoss      float64    `json:"final_loss"`
	Compiles       int        `json:"compiles"`
	CompileSeconds float64    `json:"compile_seconds"`
}

// StepSeconds is the training time without the compiles.
func (h *History) StepSeconds() float64 { return h.Seconds - h.CompileSeconds }

// Progress receives training progress: after every step (for progress
// bars and live plots) and at every logging point.
type Progress interface {
	// OnStep is called after each optimizer step.
	OnStep(step, total int, loss float64)
	// OnLog is called every LogEvery steps with the mean loss since the
	// last log.
	OnLog(e LogEntry)
}

// lossReadEvery is how often the graph trainer reads a step's loss back
// for the progress reporter (each read waits for the device).
const lossReadEvery = 250 * time.Millisecond

// Train runs cfg.Epochs passes over the data. epoch(e) yields the batches
// of epoch e (shuffled by the caller, e.g. with seed+e); stepsPerEpoch is
// their number (for the schedule and the progress total).
//
// Train drives either step the same way. A step whose loss stays on the
// device (the graph trainer) is read for the progress reporter at most
// every lossReadEvery, at each logging point and at the end (OnStep gets
// the latest loss read); the mean of each logging window is the step's own
// window sum. A loss that is not finite stops training at the first read
// that sees it.
func (t *Trainer) Train(epoch func(e int) Batches, stepsPerEpoch int, progress Progress) (*History, error) {
	if stepsPerEpoch < 1 {
		return nil, fmt.Errorf("train: steps per epoch must be ≥ 1, got %d", stepsPerEpoch)
	}
	total := stepsPerEpoch * t.cfg.Epochs
	h := &History{}
	start := nowFn()
	compiled := t.compiled.compiles()
	defer func() {
		c := t.compiled.compiles()
		h.Compiles, h.CompileSeconds = c.Count-compiled.Count, c.Seconds-compiled.Seconds
	}()
	step, windowN := 0, 0
	var last stepValues // the latest step's values, freed when the next one comes
	defer func() { last.free() }()
	lastRead := time.Time{}
	loss, norm := math.NaN(), 0.0
	diverged := func(v float64, at string, lr float64) error {
		return fmt.Errorf("train: loss is %v %s (learning rate %g): training diverged", v, at, lr)
	}
	if err := t.step.startWindow(); err != nil {
		return h, err
	}
	for e := 0; e < t.cfg.Epochs; e++ {
		for b, err := range epoch(e) {
			if err != nil {
				return h, err
			}
			if step >= total {
				return h, fmt.Errorf("train: epoch %d yielded more than the %d batches announced", e, stepsPerEpoch)
			}
			examples, err := examplesIn(b)
			if err != nil {
				return h, err
			}
			lr := t.cfg.LearningRateAt(step, total)
			logNow := t.cfg.LogEvery > 0 && ((step+1)%t.cfg.LogEvery == 0 || step+1 == total)
			v, err := t.step.run(b, lr)
			if err != nil {
				return h, err
			}
			last.free()
			last = v
			if now := nowFn(); !v.onDevice() || now.Sub(lastRead) >= lossReadEvery || step+1 == total || logNow {
				lastRead = now
				if loss, norm, err = v.read(); err != nil {
					return h, err
				}
				if math.IsNaN(loss) || math.IsInf(loss, 0) {
					return h, diverged(loss, fmt.Sprintf("at step %d", step+1), lr)
				}
			}
			step++
			h.Examples += examples
			windowN++
			h.FinalLoss = loss
			if progress != nil {
				progress.OnStep(step, total, loss)
			}
			if logNow {
				sum, err := t.step.windowLoss()
				if err == nil {
					err = t.step.startWindow()
				}
				if err != nil {
					return h, fmt.Errorf("train: reading the loss: %w", err)
				}
				mean := sum / float64(windowN)
				if math.IsNaN(mean) || math.IsInf(mean, 0) {
					return h, diverged(mean, fmt.Sprintf("in steps %d–%d", step-windowN+1, step), lr)
				}
				entry := LogEntry{Step: step, Epoch: float64(step) / float64(stepsPerEpoch), Loss: mean,
					LearningRate: t.cfg.LearningRateAt(step, total), GradNorm: norm}
				h.Log = append(h.Log, entry)
				if progress != nil {
					progress.OnLog(entry)
				}
				windowN = 0
			}
		}
	}
	h.Steps = step
	h.Seconds = nowFn().Sub(start).Seconds()
	return h, nil
}
