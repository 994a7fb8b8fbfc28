package execute_test

import (
	"testing"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/passes"
)

// TestEagerPackedModulesShare runs bert-tiny with its Linear layers and
// embeddings packed as MXINT8 (their packed values are buffers): eager
// equals compiled, and the packed modules of one configuration share
// executables, their buffers passed as inputs.
func TestEagerPackedModulesShare(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, g := execute.TracedBertTiny(t, "input_ids", "attention_mask")
	mg := &ir.MaseGraph{Model: m, Graph: g}
	if mg, _, err = passes.PackLinears(mg, passes.PackOptions{GroupSize: 32, Embeddings: true}); err != nil {
		t.Fatal(err)
	}
	in := bertTinyInputs(2, 16)
	c, err := execute.CompileOn(be, mg, execute.Mode{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want, err := c.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	defer execute.Finalize(want...)
	e, err := execute.NewEagerOn(be, mg, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for round := 0; round < 2; round++ {
		got, err := e.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		sameTensors(t, want, got)
		execute.Finalize(got...)
	}
	st := e.Stats()
	packed := st.ExecutedNodes["call_module QLinearPacked"]
	if packed != 14 {
		t.Fatalf("%d QLinearPacked stages executed, want 14: %v", packed, st.ExecutedNodes)
	}
	// As unpacked (TestEagerStats): the 14 packed Linears share 6
	// executables, the 3 packed embeddings differ.
	if st.Executables != 27 {
		t.Errorf("%d executables for %d stages, want 27", st.Executables, st.Stages)
	}
	t.Logf("packed bert-tiny eager: %d stages, %d executables", st.Stages, st.Executables)
}
