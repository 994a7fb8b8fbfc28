package execute_test

import (
	"math"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
)

// viewsGraph builds, on the MLP's fc1 (Linear 4→8), a graph that puts
// view-like nodes in every situation eager mode folds or keeps: a view of
// a placeholder, views of views, a view with several users, a view a host
// node reads, a view of a host node's result, views and an eval-mode
// dropout the graph returns, and an eval-mode dropout it does not. With
// host false, mul by 2 replaces the host node test.double.
func viewsGraph(t *testing.T, host bool) *ir.Graph {
	t.Helper()
	g := ir.New()
	add := func(op ir.OpKind, name, target string, args []any, kwargs map[string]any) *ir.Node {
		n, err := g.AddNode(op, name, target, args, kwargs)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	x := add(ir.Placeholder, "x", "x", nil, nil)                                           // [3 4]
	xv := add(ir.CallMethod, "xv", "view", []any{x, 3, 2, 2}, nil)                         // view of a placeholder
	xt := add(ir.CallMethod, "xt", "transpose", []any{xv, 1, 2}, nil)                      // view of a view
	xf := add(ir.CallFunction, "xf", "flatten", []any{xt}, map[string]any{"start_dim": 1}) // [3 4]
	h := add(ir.CallModule, "h", "fc1", []any{xf}, nil)                                    // [3 8]
	hv := add(ir.CallMethod, "hv", "view", []any{h, 3, 2, 4}, nil)                         // several users, returned
	hp := add(ir.CallMethod, "hp", "permute", []any{hv, 0, 2, 1}, nil)                     // read by the host node
	a := add(ir.CallFunction, "a", "relu", []any{hv}, nil)                                 // [3 2 4]
	av := add(ir.CallMethod, "av", "reshape", []any{a, 3, 8}, nil)                         // folds into relu
	ad := add(ir.CallFunction, "ad", "dropout", []any{av}, map[string]any{"p": 0.5})       // eval: aliased
	var d *ir.Node
	if host {
		d = add(ir.CallFunction, "d", "test.double", []any{hp}, nil) // [3 4 2]
	} else {
		d = add(ir.CallFunction, "d", "mul", []any{hp, 2.0}, nil)
	}
	sz := add(ir.CallMethod, "sz", "size", []any{d}, nil)                            // shape of a host result
	n0 := add(ir.CallFunction, "n0", "getitem", []any{sz, 0}, nil)                   // getitem on a size
	dv := add(ir.CallMethod, "dv", "reshape", []any{d, n0, 8}, nil)                  // view of a host result
	dc := add(ir.CallMethod, "dc", "contiguous", []any{dv}, nil)                     // view of that view, returned
	s := add(ir.CallFunction, "s", "add", []any{dc, ad}, nil)                        // [3 8]
	s0 := add(ir.CallFunction, "s0", "getitem", []any{s, []any{ir.Slice{}, 0}}, nil) // a tensor slice
	sd := add(ir.CallFunction, "sd", "dropout", []any{s}, map[string]any{"p": 0.5})  // eval, returned
	add(ir.Output, "output", "output", []any{[]any{sd, hv, dc, s0}}, nil)
	return g
}

// TestEagerFoldsViews runs viewsGraph eagerly and checks it against
// compiled mode, the counts of what it executed, that it released every
// buffer and that nothing was read back to the host but the host node's
// argument.
func TestEagerFoldsViews(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.NewMLP(1)
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float32, 12)
	for i := range xs {
		xs[i] = float32(i)/6 - 1
	}
	in := map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(xs, 3, 4)}
	c, err := execute.CompileOn(be, &ir.MaseGraph{Model: m, Graph: viewsGraph(t, false)}, execute.Mode{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want, err := c.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []bool{false, true} {
		e, err := execute.NewEagerOn(be, &ir.MaseGraph{Model: m, Graph: viewsGraph(t, host)}, execute.Mode{})
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 2; round++ {
			reads0 := hostReads(t, be)
			got, err := e.Run(in)
			if err != nil {
				t.Fatal(err)
			}
			wantReads := int64(0)
			if host {
				wantReads = 1 // test.double reads its argument
			}
			if r := hostReads(t, be) - reads0; r != wantReads {
				t.Errorf("host %v round %d: %d host reads, want %d", host, round, r, wantReads)
			}
			sameTensors(t, want, got)
			for i := range got {
				for j := range i {
					if got[i] == got[j] {
						t.Errorf("outputs %d and %d are the same tensor", j, i)
					}
				}
			}
			execute.Finalize(got...)
		}
		// Stages: [xv xt xf] [h hv hp] [a av] [ad] [d] [sz n0 dv dc] or
		// [d sz n0 dv dc] without the host node, [s s0] [sd].
		st := e.Stats()
		stages, executed, host1 := 8, 6, 1
		if !host {
			stages, executed, host1 = 7, 6, 0
		}
		if st.Stages != stages || st.Executed != executed || st.Aliased != 1 || st.Host != host1 {
			t.Errorf("host %v: %+v: want %d stages, %d executed, 1 aliased, %d host", host, st, stages, executed, host1)
		}
		t.Logf("host %v: %+v", host, st)
		checkFlat(t, be, e, in, 6)
		e.Close()
	}
	execute.Finalize(want...)
}

func hostReads(t *testing.T, be compute.Backend) int64 {
	t.Helper()
	n, ok := backend.HostReads(be)
	if !ok {
		t.Fatal("the backend does not count host reads")
	}
	return n
}

// sameTensors checks two runs' float32 outputs agree (reading them).
func sameTensors(t *testing.T, want, got []*tensors.Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d outputs, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Shape().Equal(want[i].Shape()) {
			t.Fatalf("output %d: shape %s, want %s", i, got[i].Shape(), want[i].Shape())
		}
		w, g := tensors.MustCopyFlatData[float32](want[i]), tensors.MustCopyFlatData[float32](got[i])
		for j := range w {
			if math.Abs(float64(w[j]-g[j])) > 1e-6*(1+math.Abs(float64(w[j]))) {
				t.Fatalf("output %d[%d]: %v, want %v", i, j, g[j], w[j])
			}
		}
	}
}

// TestEagerNoHostReads checks an eager bert-tiny forward reads nothing
// back to the host between its nodes.
func TestEagerNoHostReads(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, g := execute.TracedBertTiny(t, "input_ids", "attention_mask")
	e, err := execute.NewEagerOn(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	in := bertTinyInputs(2, 16)
	for round := 0; round < 2; round++ {
		reads0 := hostReads(t, be)
		outs, err := e.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if r := hostReads(t, be) - reads0; r != 0 {
			t.Errorf("round %d: %d host reads during the forward", round, r)
		}
		tensors.MustCopyFlatData[float32](outs[0])
		if r := hostReads(t, be) - reads0; r == 0 {
			t.Error("reading the output counted no host read: the test sees nothing")
		}
		execute.Finalize(outs...)
	}
}
