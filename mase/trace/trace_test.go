package trace_test

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// toy is a model whose forward is given by a function, to test the tracer.
type toy struct {
	nn.Container
	forward func(t *trace.Tracer, in map[string]*ir.Node) error
}

func (m *toy) InputNames() []string    { return []string{"x", "y"} }
func (m *toy) DefaultInputs() []string { return []string{"x"} }
func (m *toy) Forward(t *trace.Tracer, in map[string]*ir.Node) error {
	return m.forward(t, in)
}

func newToy(t *testing.T, fwd func(t *trace.Tracer, in map[string]*ir.Node) error) *nn.Model {
	t.Helper()
	root := &toy{Container: nn.Container{Type: "Toy", Kids: []nn.Named{
		{Name: "fc", Module: nn.NewLinear(2, 2, true)},
		{Name: "block", Module: &nn.Container{Type: "Block", Kids: []nn.Named{{Name: "act", Module: nn.NewReLU()}}}},
	}}, forward: fwd}
	m, err := nn.NewModel(root, 1)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTraceRecordsCalls(t *testing.T) {
	m := newToy(t, func(t *trace.Tracer, in map[string]*ir.Node) error {
		h := t.Module("fc", in["x"])
		h = t.Module("block.act", h)
		if y := in["y"]; y != nil {
			h = t.Fn("add", h, y)
		}
		t.Output(t.Method("relu", h))
		return nil
	})
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range g.Nodes() {
		got = append(got, n.Name)
	}
	if s := strings.Join(got, " "); s != "x fc block_act relu output" {
		t.Errorf("default inputs: %s", s)
	}
	g, err = trace.Trace(m, []string{"y", "x"}) // placeholders follow the signature order
	if err != nil {
		t.Fatal(err)
	}
	if ps := g.Placeholders(); len(ps) != 2 || ps[0].Name != "x" || g.Node("add") == nil {
		t.Errorf("with y: %v", g)
	}
}

func TestTraceErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		fwd  func(t *trace.Tracer, in map[string]*ir.Node) error
		want string
	}{
		"unknown module": {func(t *trace.Tracer, in map[string]*ir.Node) error {
			t.Output(t.Module("nope", in["x"]))
			return nil
		}, `module "nope", which the model does not have`},
		"container call": {func(t *trace.Tracer, in map[string]*ir.Node) error {
			t.Output(t.Module("block", in["x"]))
			return nil
		}, "not a leaf module"},
		"no output": {func(t *trace.Tracer, in map[string]*ir.Node) error { return nil }, "no output"},
	} {
		_, err := trace.Trace(newToy(t, tc.fwd), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
	m := newToy(t, nil)
	if _, err := trace.Trace(m, []string{"z"}); err == nil || !strings.Contains(err.Error(), "allowed: x, y") {
		t.Errorf("unknown input: %v", err)
	}
	plain, _ := nn.NewModel(&nn.Container{Type: "Plain"}, 0)
	if _, err := trace.Trace(plain, nil); err == nil || !strings.Contains(err.Error(), "cannot be traced") {
		t.Errorf("untraceable: %v", err)
	}
}

func TestTraceRejectsUnknownOp(t *testing.T) {
	for _, tc := range []struct {
		fwd  func(t *trace.Tracer, in map[string]*ir.Node) error
		want string
	}{
		{func(t *trace.Tracer, in map[string]*ir.Node) error {
			t.Output(t.Fn("frobnicate", t.Module("fc", in["x"])))
			return nil
		}, `no lowering for function "frobnicate"`},
		{func(t *trace.Tracer, in map[string]*ir.Node) error {
			t.Output(t.Method("linear", t.Module("fc", in["x"])))
			return nil
		}, `no lowering for method "linear"`},
	} {
		_, err := trace.Trace(newToy(t, tc.fwd), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Trace: %v, want an error with %q", err, tc.want)
		}
	}
}
