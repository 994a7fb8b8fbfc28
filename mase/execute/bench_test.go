package execute_test

import (
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/internal/modeltest"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/trace"
)

// BenchmarkBertTinyForward times one compiled eval forward of bert-tiny on
// a batch of 8 sequences of 128 tokens (the steady state: compilation
// happens before the timer starts).
func BenchmarkBertTinyForward(b *testing.B) {
	mg, in := modeltest.BertTiny(b, 8, 128)
	c, err := execute.Compile(mg, execute.Mode{})
	if err != nil {
		b.Fatal(err)
	}
	modeltest.BenchRuns(b, c, in)
}

// BenchmarkTraceBertTiny times tracing bert-tiny into a MaseGraph.
func BenchmarkTraceBertTiny(b *testing.B) {
	m, err := models.NewBertTiny(1)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := trace.Trace(m, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEagerBertTiny times one eager eval forward of bert-tiny at Lab
// 4's setting (8 sequences of 128 token ids, traced with input_ids only),
// after a first run that compiles every node's executable.
func BenchmarkEagerBertTiny(b *testing.B) {
	m, g := execute.TracedBertTiny(b, "input_ids")
	e, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ids := make([]int32, 8*128)
	for i := range ids {
		ids[i] = int32(1000 + i%20000)
	}
	in := map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, 8, 128)}
	outs, err := e.Run(in)
	if err != nil {
		b.Fatal(err)
	}
	execute.Finalize(outs...)
	b.ResetTimer()
	for b.Loop() {
		outs, err := e.Run(in)
		if err != nil {
			b.Fatal(err)
		}
		execute.Finalize(outs...)
	}
}

// BenchmarkEagerBertTinyFirstRun times building an eager bert-tiny runner
// and its first forward at Lab 4's setting: the compilation of its
// executables, what Lab 4's eager first call costs.
func BenchmarkEagerBertTinyFirstRun(b *testing.B) {
	m, g := execute.TracedBertTiny(b, "input_ids")
	ids := make([]int32, 8*128)
	for i := range ids {
		ids[i] = int32(1000 + i%20000)
	}
	in := map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, 8, 128)}
	for b.Loop() {
		e, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
		if err != nil {
			b.Fatal(err)
		}
		outs, err := e.Run(in)
		if err != nil {
			b.Fatal(err)
		}
		execute.Finalize(outs...)
		e.Close()
	}
}
