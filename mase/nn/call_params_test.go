package nn_test

import (
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"

	"github.com/gomase/gomase/internal/modeltest"
	"github.com/gomase/gomase/mase/nn"
)

// TestCallParams checks a call whose parameters are given reads them, and
// only them, and refuses what would touch the store.
func TestCallParams(t *testing.T) {
	m, err := nn.NewModel(&nn.Container{Type: "Net", Kids: []nn.Named{
		{Name: "lin", Module: nn.NewLinear(2, 2, true)},
		{Name: "bn", Module: nn.NewBatchNorm2d(2)},
	}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	got, err := modeltest.RunOnce(t, m, func(g *graph.Graph) *graph.Node {
		w := graph.Const(g, [][]float32{{1, 0}, {0, 1}})
		b := graph.Const(g, []float32{10, 20})
		c := &nn.Call{Graph: g, Scope: m.Scope("lin"), Path: "lin", Model: m, Params: map[string]*graph.Node{"weight": w, "bias": b}}
		y, err := c.Forward(m.Root.Children()[0].Module.(nn.Leaf), []any{graph.Const(g, [][]float32{{1, 2}})}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.RawParam("other")
		errs = append(errs, err)
		_, err = c.Buffer("running_mean")
		errs = append(errs, err)
		bn := &nn.Call{Graph: g, Scope: m.Scope("bn"), Path: "bn", Model: m, Params: map[string]*graph.Node{}}
		errs = append(errs, bn.SetBuffer("running_mean", graph.Const(g, []float32{0, 0})))
		return y.(*graph.Node)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 11 || got[1] != 22 {
		t.Errorf("Linear with given parameters: %v, want [11 22]", got)
	}
	for i, want := range []string{`no parameter "other"`, `no buffer "running_mean"`, "cannot update buffer"} {
		if errs[i] == nil || !strings.Contains(errs[i].Error(), want) {
			t.Errorf("error %d: %v, want %q", i, errs[i], want)
		}
	}
}
