package emit_test

import (
	"context"
	"testing"

	"github.com/gomase/gomase/rtl/emit"
	"github.com/gomase/gomase/rtl/synth"
)

// TestSynthesizeLabMLP synthesises the emitted lab MLP as written (ROM
// files read from the design directory) at parallelism 1 and 4: more
// parallelism costs more LUTs, and the design has registers (the skid
// buffers and the row buffer).
func TestSynthesizeLabMLP(t *testing.T) {
	var luts [2]int
	for i, par := range []int{1, 4} {
		dir := t.TempDir()
		if _, err := emit.Verilog(labMLP(t, par), dir, emit.Options{}); err != nil {
			t.Fatal(err)
		}
		s, err := emit.Synthesize(context.Background(), dir, synth.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("parallelism %d: %s", par, s)
		if s.LUTs == 0 || s.FlipFlops == 0 {
			t.Errorf("parallelism %d: %d LUTs, %d flip-flops: want both", par, s.LUTs, s.FlipFlops)
		}
		luts[i] = s.LUTs
	}
	if luts[1] <= luts[0] {
		t.Errorf("LUTs at parallelism 4 (%d) not above parallelism 1 (%d)", luts[1], luts[0])
	}
	if _, err := emit.Synthesize(context.Background(), t.TempDir(), synth.Options{}); err == nil {
		t.Error("no error for a directory without a design")
	}
}
