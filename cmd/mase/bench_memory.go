package main

import (
	"fmt"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/workmem"
)

// The forward sizes profile and bench compile accept.
const (
	maxForwardBatch = 4096
	maxForwardSeq   = 512 // bert-tiny's position embeddings
	minForwardImage = 32  // ResNet-18 halves the image five times
	maxForwardImage = 1024
)

// maxBenchLoop bounds --loop: the calls unrolled or looped inside one
// executable per timing.
const maxBenchLoop = 10000

// checkRepsAndLoop refuses a --reps or --loop outside its bounds.
func checkRepsAndLoop(reps, loop int) error {
	switch {
	case reps < 1 || reps > maxBenchCalls:
		return fmt.Errorf("--reps must be ≥ 1 and at most %d (got %d)", maxBenchCalls, reps)
	case loop < 1 || loop > maxBenchLoop:
		return fmt.Errorf("--loop must be ≥ 1 and at most %d (got %d)", maxBenchLoop, loop)
	}
	return nil
}

// checkForwardSizes refuses a --batch, --seq or --image outside the
// bounds profile and bench compile share.
func checkForwardSizes(batch, seq, image int) error {
	if batch < 1 || batch > maxForwardBatch || seq < 1 || seq > maxForwardSeq || image < minForwardImage || image > maxForwardImage {
		return fmt.Errorf("--batch must be 1..%d, --seq 1..%d and --image %d..%d (got %d, %d, %d)",
			maxForwardBatch, maxForwardSeq, minForwardImage, maxForwardImage, batch, seq, image)
	}
	return nil
}

// checkForwardMemory checks, before anything is built, that the forward
// of a profile or bench compile run fits (workmem, limits.Estimate.Check):
// the weights on the host and two backend copies, the activations at the
// batch and shape (every node's output at once when holdsAll, as
// profile's metadata pass holds them) and extra bytes the command holds
// beside them. The error starts with command ("compile " for bench
// compile, "" for profile) and the flags. An unknown model is left to
// benchModel's error.
func checkForwardMemory(command, model string, batch, seq, image int, spec string, holdsAll bool, extra int64) error {
	w := workmem.Where{WeightCopies: 3, OnDevice: onDevice(spec), HoldsAll: holdsAll}
	b := limits.Dim{Name: "--batch", N: int64(batch)}
	var e limits.Estimate
	var flags string
	switch model {
	case "bert-tiny":
		e = workmem.BertForward(models.BertTinyConfig(), b, limits.Dim{Name: "--seq", N: int64(seq)}, w)
		flags = fmt.Sprintf("--batch %d --seq %d", batch, seq)
	case "resnet18":
		e = workmem.ResNetForward(models.ResNet18Config(), b, limits.Dim{Name: "--image", N: int64(image)}, w)
		flags = fmt.Sprintf("--model resnet18 --batch %d --image %d", batch, image)
	default:
		return nil
	}
	e.Add(workmem.Copies, limits.Dim{N: extra})
	return e.Check(command + flags)
}

// onDevice reports whether the backend spec (empty: the default) names
// an XLA backend, whose activations live in the accelerator's memory.
func onDevice(spec string) bool {
	if spec == "" {
		spec = backend.DefaultSpec()
	}
	s, err := backend.ParseSpec(spec)
	return err == nil && s.Backend == "xla"
}
