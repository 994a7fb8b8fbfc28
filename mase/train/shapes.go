package train

import (
	"github.com/gomlx/compute"

	"github.com/gomase/gomase/mase/backend"
)

// Shapes is how a backend wants its batches shaped. A compiled backend
// builds one executable per input shape, so on XLA batches are padded to a
// few length buckets and to a fixed size (the short last batch gets
// padding rows that the loss and the metrics leave out): an IMDb epoch at
// 512 tokens then compiles at most 8 training and 8 evaluation
// executables. The Go backend compiles in milliseconds and pays for every
// padded token, so it pads less.
type Shapes struct {
	// PadToMultipleOf rounds each batch's length up to a multiple of this
	// (data.BatchOptions.PadToMultipleOf).
	PadToMultipleOf int
	// FixedBatch pads a short batch up to the batch size
	// (data.BatchOptions.PadBatch).
	FixedBatch bool
	// EvalBatchSize is the evaluation batch size (0: the training one).
	EvalBatchSize int
}

// ShapesFor returns a backend's batch shapes: multiples of 64, fixed
// batches and evaluation batches of 64 on XLA; multiples of 32, the last
// batch short and evaluation at the training batch size on the Go
// backend.
func ShapesFor(be compute.Backend) Shapes {
	if backend.IsGo(be) {
		return HostShapes
	}
	return CompiledShapes
}

// The shapes of the two kinds of backend.
var (
	// HostShapes are the Go backend's.
	HostShapes = Shapes{PadToMultipleOf: 32}
	// CompiledShapes are XLA's (GPUs).
	CompiledShapes = Shapes{PadToMultipleOf: 64, FixedBatch: true, EvalBatchSize: 64}
)

// DefaultShapes is ShapesFor the default backend.
func DefaultShapes() (Shapes, error) {
	be, err := backend.Default()
	if err != nil {
		return Shapes{}, err
	}
	return ShapesFor(be), nil
}
