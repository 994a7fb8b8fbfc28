package execute_test

import (
	"runtime/debug"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/trace"
)

// liveBuffers reads the counted backend's live buffers.
func liveBuffers(t *testing.T, be compute.Backend) int64 {
	t.Helper()
	n, ok := backend.LiveBuffers(be)
	if !ok {
		t.Fatal("the backend does not count its buffers")
	}
	return n
}

// checkFlat runs r calls times with the garbage collector off (so no
// finalizer frees what the runner forgot), finalizing the outputs of each
// call as a caller does, and fails when the live buffers after the third
// call are not those after the last: a runner that keeps intermediates,
// uploads or outputs grows by at least one buffer per call.
func checkFlat(t *testing.T, be compute.Backend, r execute.Runner, in map[string]*tensors.Tensor, calls int) {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var after3 int64
	for i := 1; i <= calls; i++ {
		outs, err := r.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(outs) == 0 {
			t.Fatal("no outputs")
		}
		for _, o := range outs {
			o.MustFinalizeAll()
		}
		if i == 3 {
			after3 = liveBuffers(t, be)
		}
	}
	if n := liveBuffers(t, be); n != after3 {
		t.Errorf("live buffers grew from %d after call 3 to %d after call %d", after3, n, calls)
	}
}

func bertTinyInputs(batch, seq int) map[string]*tensors.Tensor {
	ids := make([]int32, batch*seq)
	mask := make([]int32, batch*seq)
	for i := range ids {
		ids[i] = int32(1000 + (i*7919)%20000)
		mask[i] = 1
	}
	for i := 0; i < batch; i++ { // padding at the end of every other row
		if i%2 == 1 {
			for j := seq / 2; j < seq; j++ {
				mask[i*seq+j] = 0
			}
		}
	}
	return map[string]*tensors.Tensor{
		"input_ids":      tensors.FromFlatDataAndDimensions(ids, batch, seq),
		"attention_mask": tensors.FromFlatDataAndDimensions(mask, batch, seq),
	}
}

func TestRunnersReleaseBuffers(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, g := execute.TracedBertTiny(t, "input_ids", "attention_mask")
	in := bertTinyInputs(2, 16)
	for _, tc := range []struct {
		name string
		make func() (execute.Runner, error)
	}{
		{"compiled", func() (execute.Runner, error) {
			return execute.CompileOn(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, false)
		}},
		{"compiled with capture", func() (execute.Runner, error) {
			return execute.CompileOn(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, true)
		}},
		{"eager", func() (execute.Runner, error) {
			return execute.NewEagerOn(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
		}},
		{"eager, train mode", func() (execute.Runner, error) {
			return execute.NewEagerOn(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{Training: true})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.make()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			checkFlat(t, be, r, in, 8)
		})
	}
}

// TestSegmentedReleasesBuffers puts host nodes (which return new host
// tensors the next segment uploads) between compiled segments.
func TestSegmentedReleasesBuffers(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.NewMLP(1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	insertDouble(t, g, "flatten", "fc1")
	s, err := execute.NewSegmentedOn(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, h := s.Segments(); c != 2 || h != 1 {
		t.Fatalf("segments %d compiled, %d host; want 2, 1", c, h)
	}
	in, err := models.DummyInput(m, []string{"x"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	checkFlat(t, be, s, in, 8)
}

// insertDouble puts a test.double host node between two nodes of g.
func insertDouble(t *testing.T, g *ir.Graph, after, before string) {
	t.Helper()
	a, b := g.Node(after), g.Node(before)
	var host *ir.Node
	var err error
	if err := g.InsertingAfter(a, func() error {
		host, err = g.AddNode(ir.CallFunction, "double_"+after, "test.double", []any{a}, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.ReplaceInputWith(a, host); err != nil {
		t.Fatal(err)
	}
}
