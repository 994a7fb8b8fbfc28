package ops_test

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/ops"
)

func TestInferConvAndPoolModules(t *testing.T) {
	for _, tc := range []struct {
		mod     nn.Module
		typ, op string
	}{
		{nn.NewConv2d(3, 4, 3, 1, 1, true), "module_related_func", "conv2d"},
		{nn.NewBatchNorm2d(4), "module", "batch_norm2d"},
		{nn.NewMaxPool2d(3, 2, 1), "module_related_func", "max_pool2d"},
		{nn.NewAdaptiveAvgPool2d(1, 1), "module_related_func", "adaptive_avg_pool2d"},
		{nn.NewReLUInplace(), "module_related_func", "relu"},
	} {
		g := ir.New()
		x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
		n := g.MustAddNode(ir.CallModule, "", "m", []any{x}, nil)
		typ, op, err := ops.Infer(n, tc.mod)
		if err != nil || typ != tc.typ || op != tc.op {
			t.Errorf("%s: Infer = %s, %s, %v; want %s, %s", tc.mod.TypeName(), typ, op, err, tc.typ, tc.op)
		}
	}
}

// pReLU is a module class MASE's operator inference rejects (LeakyReLU
// was the example until gomase learnt it for the Lab 4 extension).
type pReLU struct{ nn.Leaf }

func (pReLU) TypeName() string { return "PReLU" }

func TestInferRejectsUnknown(t *testing.T) {
	g := ir.New()
	x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	m := g.MustAddNode(ir.CallModule, "", "act", []any{x}, nil)
	if _, _, err := ops.Infer(m, pReLU{nn.NewReLU()}); err == nil || !strings.Contains(err.Error(), "unknown module act (class PReLU)") {
		t.Errorf("PReLU: %v", err)
	}
	f := g.MustAddNode(ir.CallFunction, "", "quux", []any{x}, nil)
	if _, _, err := ops.Infer(f, nil); err == nil || !strings.Contains(err.Error(), "quux") {
		t.Errorf("unknown function: %v", err)
	}
	// Longest match wins: "softmax" beats "max"; the builtin list wins ties.
	s := g.MustAddNode(ir.CallFunction, "", "softmax", []any{x}, nil)
	if typ, op, _ := ops.Infer(s, nil); typ != "builtin_func" || op != "softmax" {
		t.Errorf("softmax → %s/%s", typ, op)
	}
	r := g.MustAddNode(ir.CallFunction, "", "relu", []any{x}, nil)
	if typ, op, _ := ops.Infer(r, nil); typ != "module_related_func" || op != "relu" {
		t.Errorf("relu → %s/%s", typ, op)
	}
}
