package passes_test

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/passes"
)

// scaleArgs are the typed arguments of a test pass.
type scaleArgs struct{ Factor int }

func scalePass(def bool) passes.Pass {
	parse := func(m map[string]any) (scaleArgs, error) {
		f, _ := m["factor"].(int)
		return scaleArgs{Factor: f}, nil
	}
	var d func(*ir.MaseGraph) (scaleArgs, error)
	if def {
		d = func(*ir.MaseGraph) (scaleArgs, error) { return scaleArgs{Factor: 7}, nil }
	}
	return passes.WithArgs("scale_analysis_pass", "test", func(mg *ir.MaseGraph, a scaleArgs) (*ir.MaseGraph, passes.Info, error) {
		return mg, passes.Info{"factor": a.Factor}, nil
	}, parse, d)
}

func TestWithArgs(t *testing.T) {
	mg := &ir.MaseGraph{Graph: ir.New()}
	for _, tc := range []struct {
		arg  any
		def  bool
		want int
		err  string
	}{
		{arg: scaleArgs{Factor: 2}, want: 2},
		{arg: &scaleArgs{Factor: 3}, want: 3},
		{arg: map[string]any{"factor": 4}, want: 4},
		{arg: nil, def: true, want: 7},
		{arg: nil, err: "no arguments: give a scaleArgs or a MASE config map"},
		{arg: 1.5, err: "arguments must be a scaleArgs or a MASE config map, got float64"},
		{arg: 1.5, def: true, err: "(or none, for the default), got float64"},
	} {
		_, info, err := scalePass(tc.def).Run(mg, tc.arg)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("arg %v: %v, want an error with %q", tc.arg, err, tc.err)
			}
			continue
		}
		if err != nil || info["factor"] != tc.want {
			t.Errorf("arg %v: info %v, %v; want factor %d", tc.arg, info, err, tc.want)
		}
	}
	// A second wrong call reads the same: the message is not built up.
	withDefault := scalePass(true)
	for range 2 {
		if _, _, err := withDefault.Run(mg, 1.5); err == nil || strings.Count(err.Error(), "or none") != 1 {
			t.Errorf("repeated wrong arguments: %v", err)
		}
	}
	p := passes.NoArgs("noop_transform_pass", "test", func(mg *ir.MaseGraph) (*ir.MaseGraph, passes.Info, error) { return mg, nil, nil })
	if _, _, err := p.Run(mg, 1); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("NoArgs with an argument: %v", err)
	}
	if p.Short() != "noop" {
		t.Errorf("Short() = %q", p.Short())
	}
}

func TestRegistry(t *testing.T) {
	r := passes.Standard()
	for _, name := range []string{passes.RemoveDropoutPass, "remove_dropout"} {
		if p, err := r.Lookup(name); err != nil || p.Name != passes.RemoveDropoutPass {
			t.Errorf("Lookup(%s) = %q, %v", name, p.Name, err)
		}
	}
	if _, err := r.Lookup("remove_dropouts"); err == nil || !strings.Contains(err.Error(), "allowed: ") || !strings.Contains(err.Error(), "count_dropout") {
		t.Errorf("unknown pass: %v", err)
	}
	if err := r.Add(scalePass(false), scalePass(true)); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Errorf("duplicate: %v", err)
	}
	if err := r.Add(passes.NoArgs("plain", "a name without MASE's suffix", nil)); err != nil {
		t.Errorf("a pass without a suffix: %v", err)
	}
	if err := r.Add(passes.Pass{Name: "x"}); err == nil || !strings.Contains(err.Error(), "needs a name and a Run") {
		t.Errorf("no Run: %v", err)
	}
	if _, err := r.Pipeline("init_metadata", "nope"); err == nil || !strings.Contains(err.Error(), `unknown pass "nope"`) {
		t.Errorf("Pipeline with an unknown pass: %v", err)
	}
	// Every pass of the package is registered once, by its MASE name.
	if got, want := len(r.Passes()), len(passes.All())+1; got != want {
		t.Errorf("%d passes registered, want %d", got, want)
	}
}

func TestRemoveDropoutAsPass(t *testing.T) {
	mg := bertGraph(t, nil)
	p, err := passes.Standard().Lookup("remove_dropout")
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := p.Run(mg, nil)
	if err != nil || info[passes.Changed] != 6 {
		t.Errorf("remove_dropout: %v, %v; want 6 changed", info, err)
	}
}
