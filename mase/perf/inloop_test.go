package perf

import (
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
		l, err := NewInLoop(be, reps, func(i Counter, s []*graph.Node) []*graph.Node {
			// s[1] counts the repetitions it saw, through the counter.
			return []*graph.Node{graph.MulScalar(s[0], 2), graph.Add(s[1], graph.ConvertDType(i, dtypes.Float32))}
		})
		if err != nil {
			t.Fatal(err)
		}
		perRep, sum, err := l.Time(tensors.FromValue([]float32{1, 2}), tensors.FromScalar(float32(0)))
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := math.Ldexp(3, reps); sum != want {
			t.Errorf("reps %d: sum %v, want %v", reps, sum, want)
		}
		if perRep <= 0 {
			t.Errorf("reps %d: time per repetition %v", reps, perRep)
		}
	}
	if _, err := NewInLoop(be, 0, nil); err == nil || !strings.Contains(err.Error(), "at least one repetition") {
		t.Errorf("no repetitions: %v", err)
	}
	if d, err := DispatchFloor(be, 5); err != nil || d <= 0 {
		t.Errorf("DispatchFloor: %v, %v", d, err)
	}
}
