package perf

import (
	"testing"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/timeline"
	"github.com/gomase/gomase/mase/trace"
)

// BenchmarkProfileOverhead times a bert-tiny b8×128 forward in each mode
// with and without a recorder: the cost of profiling (issue 29's targets:
// compiled within 5%, eager within 15%).
func BenchmarkProfileOverhead(b *testing.B) {
	m, err := models.NewBertTiny(1)
	if err != nil {
		b.Fatal(err)
	}
	in := bertTinyIDs(8, 128)
	for _, mode := range []string{Eager, Compiled} {
		g, err := trace.Trace(m, []string{"input_ids"})
		if err != nil {
			b.Fatal(err)
		}
		mg := &ir.MaseGraph{Model: m, Graph: g}
		var r RecordingRunner
		if mode == Eager {
			r, err = execute.NewEager(mg, execute.Mode{})
		} else {
			r, err = execute.Compile(mg, execute.Mode{})
		}
		if err != nil {
			b.Fatal(err)
		}
		for _, profiled := range []bool{false, true} {
			name := mode + "/plain"
			if profiled {
				name = mode + "/profiled"
			}
			b.Run(name, func(b *testing.B) {
				if profiled {
					r.SetRecorder(timeline.New())
				} else {
					r.SetRecorder(nil)
				}
				outs, err := r.Run(in) // warm: compiled before the timing
				if err != nil {
					b.Fatal(err)
				}
				execute.Finalize(outs...)
				b.ResetTimer()
				for range b.N {
					outs, err := r.Run(in)
					if err != nil {
						b.Fatal(err)
					}
					execute.Finalize(outs...)
				}
			})
		}
		r.Close()
	}
}
