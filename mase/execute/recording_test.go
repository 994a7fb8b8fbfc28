package execute_test

import (
	"testing"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/timeline"
)

// TestRecordedSpans profiles two runs of bert-tiny in each mode: the first
// run's compile spans are exactly the executables compiled, the second
// compiles nothing, every span lies inside its Run, and (eager) the
// executable calls are exactly RunStats.Executed.
func TestRecordedSpans(t *testing.T) {
	m, g := execute.TracedBertTiny(t, "input_ids")
	mg := &ir.MaseGraph{Model: m, Graph: g}
	in := bertTinyInputs(2, 16)
	delete(in, "attention_mask")

	t.Run("eager", func(t *testing.T) {
		e, err := execute.NewEager(mg, execute.Mode{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		for round := 0; round < 2; round++ {
			rec := timeline.New()
			e.SetRecorder(rec)
			before := e.Executables()
			outs, err := e.Run(in)
			if err != nil {
				t.Fatal(err)
			}
			execute.Finalize(outs...)
			counts := map[string]int{}
			evs := rec.Events()
			for _, ev := range evs {
				counts[ev.Cat]++
			}
			compiled := e.Executables() - before
			if counts[execute.CatRun] != 1 || counts[execute.CatCompile] != compiled ||
				counts[execute.CatCompile]+counts[execute.CatExecute] != e.Stats().Executed {
				t.Errorf("round %d: spans %v, %d executables compiled, %d calls", round, counts, compiled, e.Stats().Executed)
			}
			if round == 1 && compiled != 0 {
				t.Errorf("the second run compiled %d executables", compiled)
			}
			// The input is copied into the Go backend's memory once (it
			// stays there: the backend's buffers are host memory).
			if want := 1 - round; counts[execute.CatTransfer] != want {
				t.Errorf("round %d: %d transfer spans, want %d", round, counts[execute.CatTransfer], want)
			}
			for _, ev := range evs {
				if ev.Cat == execute.CatTransfer && ev.Args["bytes"] != int64(2*16*4) {
					t.Errorf("transfer span %s: %v bytes, want the input's %d", ev.Name, ev.Args["bytes"], 2*16*4)
				}
			}
			run := evs[0]
			for _, ev := range evs[1:] {
				if ev.Start < run.Start || ev.End() > run.End() {
					t.Errorf("span %s %v+%v lies outside the Run %v+%v", ev.Name, ev.Start, ev.Dur, run.Start, run.Dur)
				}
				if ev.Cat == execute.CatCompile && ev.Args["shapes"] == "" {
					t.Errorf("compile span %s names no shapes", ev.Name)
				}
			}
		}
	})

	t.Run("compiled", func(t *testing.T) {
		c, err := execute.Compile(mg, execute.Mode{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rec := timeline.New()
		c.SetRecorder(rec)
		for round := 0; round < 2; round++ {
			outs, err := c.Run(in)
			if err != nil {
				t.Fatal(err)
			}
			execute.Finalize(outs...)
		}
		evs := rec.Events()
		if len(evs) != 2 || evs[0].Cat != execute.CatCompile || evs[1].Cat != execute.CatExecute || c.Executables() != 1 {
			t.Errorf("spans %+v, %d executables: want one compile, then one execute", evs, c.Executables())
		}
	})
}
