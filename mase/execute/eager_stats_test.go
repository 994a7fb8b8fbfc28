package execute_test

import (
	"fmt"
	"testing"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/ops"
)

// TestEagerStats checks the counts of an eager bert-tiny forward (Lab 4's
// graph, traced with input_ids only): every stage is executed, constant
// or on the host, the first run executes the constant stages once to
// build them, and the executed stages add up.
func TestEagerStats(t *testing.T) {
	m, g := execute.TracedBertTiny(t, "input_ids")
	e, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if st := e.Stats(); st.Executed != 0 || st.Stages != 0 {
		t.Errorf("stats before the first run: %+v", st)
	}
	in := bertTinyInputs(2, 16)
	delete(in, "attention_mask")
	var first execute.RunStats
	for round := 0; round < 2; round++ {
		outs, err := e.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		execute.Finalize(outs...)
		st := e.Stats()
		if round == 0 {
			first = st
			// Every stage is executed to build its executable, except
			// the aliasing stages whose executable an earlier stage
			// built (eval-mode Dropout modules sharing one).
			if st.Constant != 0 || st.Executed+st.Aliased+st.Host != st.Stages {
				t.Errorf("first run: %+v: want every non-host stage executed or aliased", st)
			}
			continue
		}
		if st.Executed+st.Constant+st.Aliased+st.Host != st.Stages {
			t.Errorf("executed %d + constant %d + aliased %d + host %d != %d stages", st.Executed, st.Constant, st.Aliased, st.Host, st.Stages)
		}
		if st.Constant == 0 || st.Executed >= first.Executed {
			t.Errorf("second run: %+v: want the constant stages (size, getitem on sizes) skipped", st)
		}
		if st.Executables != first.Executables {
			t.Errorf("second run compiled %d more executables", st.Executables-first.Executables)
		}
		sum := 0
		for _, k := range st.ExecutedNodes {
			sum += k
		}
		if sum != st.Executed {
			t.Errorf("ExecutedNodes adds up to %d, Executed is %d", sum, st.Executed)
		}
		if st.ExecutedNodes["call_module Linear"] != 14 {
			t.Errorf("%d Linear stages executed, want bert-tiny's 14", st.ExecutedNodes["call_module Linear"])
		}
		// Views fold into their producers and eval-mode dropout hands its
		// input on: 38 executable calls (65 before), 14 of them Linear.
		for label := range st.ExecutedNodes {
			var op, target string
			fmt.Sscan(label, &op, &target)
			if ops.IsView(ir.OpKind(op), target) || target == "Dropout" {
				t.Errorf("%s was executed", label)
			}
		}
		if st.Aliased < 6 {
			t.Errorf("%d stages aliased, want at least bert-tiny's 6 Dropout modules", st.Aliased)
		}
		// Stages share an executable when they compute the same thing on
		// the same shapes: 5 of the 6 adds (the residuals and the first
		// embeddings add) share one, the 2 attentions another; modules
		// share when their configurations are equal, their parameters
		// passed as inputs: the 14 Linear stages need 6 executables (Q, K
		// and V of both layers, with their head views folded in, share
		// one; the attention outputs, intermediates and outputs of the two
		// layers one each; the pooler and the classifier), the 5
		// LayerNorms 3 (the embeddings' and the attention outputs' share;
		// the layers' output LayerNorms fold different views), the 2
		// GELUs 1, the 6 Dropouts 3 (built on the first run, aliased
		// after); the 3 Embeddings differ. 27 executables for 46 stages
		// (41 with one executable per module).
		if st.Executables != 27 {
			t.Errorf("%d executables, want 27", st.Executables)
		}
		if n := first.ExecutedNodes["call_module Dropout"]; n != 3 {
			t.Errorf("first run executed %d Dropout stages, want 3 (one per shared executable)", n)
		}
		if st.Executed != 38 {
			t.Errorf("%d executable calls per forward, want 38", st.Executed)
		}
		t.Logf("eager bert-tiny: %d stages, %d executed, %d constant, %d aliased, %d host, %d executables; executed: %v",
			st.Stages, st.Executed, st.Constant, st.Aliased, st.Host, st.Executables, st.ExecutedNodes)
	}
}
