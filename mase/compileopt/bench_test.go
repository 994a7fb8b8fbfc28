package compileopt_test

import (
	"testing"

	"github.com/gomase/gomase/internal/modeltest"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/execute"
)

// BenchmarkBertTinyCompiledForward times bert-tiny's eval forward at batch 8
// × 128 tokens in compiled mode with every rewrite (what `mase bench
// compile` times and issue 30's first row compares with PyTorch eager).
func BenchmarkBertTinyCompiledForward(b *testing.B) {
	mg, in := modeltest.BertTiny(b, 8, 128)
	be, err := backend.Default()
	if err != nil {
		b.Fatal(err)
	}
	r, _, err := compileopt.NewCompiled(be, mg, execute.Mode{}, compileopt.Names())
	if err != nil {
		b.Fatal(err)
	}
	modeltest.BenchRuns(b, r, in)
}
