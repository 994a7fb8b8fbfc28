package compileopt_test

import (
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/trace"
)

// BenchmarkBertTinyCompiledForward times bert-tiny's eval forward at batch 8
// × 128 tokens in compiled mode with every rewrite (what `mase bench
// compile` times and issue 30's first row compares with PyTorch eager).
func BenchmarkBertTinyCompiledForward(b *testing.B) {
	m, err := models.NewBertTiny(1)
	if err != nil {
		b.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		b.Fatal(err)
	}
	be, err := backend.Default()
	if err != nil {
		b.Fatal(err)
	}
	r, _, err := compileopt.NewCompiled(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, compileopt.Names())
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]int32, 8*128)
	for i := range ids {
		ids[i] = int32(1000 + i%20000)
	}
	in := map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, 8, 128)}
	if _, err := r.Run(in); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := r.Run(in); err != nil {
			b.Fatal(err)
		}
	}
}
