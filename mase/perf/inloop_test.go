package perf

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
)

// TestInLoopRepeatsTheStep checks that the loop runs its step Reps times
// on the state the previous repetition returned: x doubles each time.
func TestInLoopRepeatsTheStep(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, reps := range []int{1, 5} {
		l, err := NewInLoop(be, reps, func(i Counter, s []*graph.Node) ([]*graph.Node, error) {
			// s[1] counts the repetitions it saw, through the counter.
			return []*graph.Node{graph.MulScalar(s[0], 2), graph.Add(s[1], graph.ConvertDType(i, dtypes.Float32))}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		perRep, first, err := l.Time(tensors.FromValue([]float32{1, 2}), tensors.FromScalar(float32(0)))
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := math.Ldexp(1, reps); first != want {
			t.Errorf("reps %d: first value %v, want %v", reps, first, want)
		}
		if perRep <= 0 {
			t.Errorf("reps %d: time per repetition %v", reps, perRep)
		}
	}
	if _, err := NewInLoop(be, 0, nil); err == nil || !strings.Contains(err.Error(), "at least one repetition") {
		t.Errorf("no repetitions: %v", err)
	}
	bad, err := NewInLoop(be, 2, func(_ Counter, s []*graph.Node) ([]*graph.Node, error) { return s[:1], nil })
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, _, err := bad.Time(tensors.FromScalar(float32(1)), tensors.FromScalar(float32(2))); err == nil || !strings.Contains(err.Error(), "returned 1 values for a state of 2") {
		t.Errorf("a step returning too few values: %v", err)
	}
	failing, err := NewInLoop(be, 2, func(_ Counter, s []*graph.Node) ([]*graph.Node, error) { return nil, errors.New("no such op") })
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	if _, _, err := failing.Time(tensors.FromScalar(float32(1))); err == nil || err.Error() != "no such op" {
		t.Errorf("a step's error: %v", err)
	}
	if d, err := DispatchFloor(be, 5); err != nil || d <= 0 {
		t.Errorf("DispatchFloor: %v, %v", d, err)
	}
}

func TestKernelGraphs(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float16} {
		r, err := SDPAGraph(be, [4]int{2, 2, 16, 8}, dt, false, 3, 2)
		if err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		tol := map[dtypes.DType]float64{dtypes.Float32: 1e-5, dtypes.Float16: 2e-3}[dt]
		if r.NaiveMaxAbsErr > tol || r.FusedMaxAbsErr > tol || r.NaiveMs <= 0 || r.FusedMs <= 0 || r.DispatchFloorMs <= 0 || r.Reps != 3 {
			t.Errorf("%s: %+v", dt, r)
		}
	}
	if _, err := SDPAGraph(be, [4]int{1, 1, 4, 4}, dtypes.Int32, false, 1, 1); err == nil || !strings.Contains(err.Error(), "allowed: float32, float16") {
		t.Errorf("int32 SDPA: %v", err)
	}
	for _, gs := range []int{8, 32, 512} {
		r, err := MXInt8Graph(be, 1000, gs, 3, 2)
		if err != nil {
			t.Fatalf("group %d: %v", gs, err)
		}
		if !r.BitExact || r.DequantGBs <= 0 || r.ElementwiseGBs <= 0 || r.Bytes != 1000+mxint8NumGroups(1000, gs)+2000 {
			t.Errorf("group %d: %+v", gs, r)
		}
	}
	if _, err := MXInt8Graph(be, 1000, 24, 1, 1); err == nil {
		t.Error("group size 24 accepted")
	}
}

func mxint8NumGroups(n, gs int) int { return (n + gs - 1) / gs }
