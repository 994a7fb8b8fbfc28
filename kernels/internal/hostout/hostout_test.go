package hostout

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

func TestLikeFollowsTheInput(t *testing.T) {
	shape := shapes.Make(dtypes.Float32, 2, 3)
	host := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	defer host.FinalizeAll()
	out := Like(host, shape)
	defer out.FinalizeAll()
	if out.IsShared() || !out.Shape().Equal(shape) {
		t.Fatalf("a host input gave %s (shared %v), want a host tensor of %s", out.Shape(), out.IsShared(), shape)
	}

	be := gobackend.GetBackend()
	if !be.HasSharedBuffers() {
		t.Skip("the Go backend has no shared buffers in this build")
	}
	shared, err := tensors.FromShapeForBackend(be, 0, shape)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.FinalizeAll()
	got := Like(shared, shapes.Make(dtypes.Float32, 4))
	defer got.FinalizeAll()
	if !got.IsShared() {
		t.Fatal("an input in the Go backend's shared memory gave an output outside it")
	}
	// A computation's output: on the backend, not a shared buffer.
	computed := graph.MustExecOnce(be, func(x *graph.Node) *graph.Node { return graph.OnePlus(x) }, host)
	defer computed.FinalizeAll()
	if computed.IsShared() || !computed.IsOnAnyDevice() {
		t.Fatalf("the test's computed tensor: shared %v, on device %v; want an executable's output", computed.IsShared(), computed.IsOnAnyDevice())
	}
	fromComputed := Like(computed, shape)
	defer fromComputed.FinalizeAll()
	if !fromComputed.IsShared() {
		t.Fatal("an executable's output on the Go backend gave an output outside the backend's memory")
	}
	tensors.ConstFlatData(got, func(flat []float32) {
		for i, v := range flat {
			if v != 0 {
				t.Fatalf("output[%d] = %v, want zeroed", i, v)
			}
		}
	})
}
