package backend

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestLiveBuffersCount follows buffers through uploads, executions,
// donation and finalization on a counted Go backend.
func TestLiveBuffersCount(t *testing.T) {
	be, err := Open("go")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Finalize()
	live := func() int64 {
		n, ok := LiveBuffers(be)
		if !ok {
			t.Fatal("Open's backend does not count its buffers")
		}
		return n
	}
	if n := live(); n != 0 {
		t.Fatalf("fresh backend: %d live buffers", n)
	}
	exec, err := graph.NewExec(be, func(x *graph.Node) (*graph.Node, *graph.Node) {
		return graph.AddScalar(x, 1), graph.ReduceAllSum(x)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	x := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3}, 3)
	outs, err := exec.Exec(x)
	if err != nil {
		t.Fatal(err)
	}
	// The input was uploaded (one buffer) and two outputs came back.
	if n := live(); n != 3 {
		t.Errorf("after one call: %d live buffers, want 3 (input and two outputs)", n)
	}
	if got := tensors.MustCopyFlatData[float32](outs[0]); got[2] != 4 {
		t.Errorf("x+1 = %v", got)
	}
	for _, o := range outs {
		o.MustFinalizeAll()
	}
	x.MustFinalizeAll()
	if n := live(); n != 0 {
		t.Errorf("after finalizing everything: %d live buffers, want 0", n)
	}
	// A donated input leaves the count when the execution takes it.
	y := tensors.FromScalarAndDimensions(float32(2), 4)
	donated, err := graph.DonateTensorBuffer(y, be, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := live(); n != 1 {
		t.Errorf("after uploading y: %d live, want 1", n)
	}
	outs, err = exec.Exec(donated)
	if err != nil {
		t.Fatal(err)
	}
	if n := live(); n != 2 {
		t.Errorf("after a call with y donated: %d live, want 2 (the outputs)", n)
	}
	for _, o := range outs {
		if o.DType() != dtypes.Float32 {
			t.Errorf("output dtype %s", o.DType())
		}
		o.MustFinalizeAll()
	}
	if n := live(); n != 0 {
		t.Errorf("at the end: %d live, want 0", n)
	}
	if Unwrap(be) == be {
		t.Error("Unwrap returned the counted backend itself")
	}
	if Counted(be) != be {
		t.Error("Counted wrapped a counted backend again")
	}
}
