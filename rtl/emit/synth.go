package emit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomase/gomase/rtl/synth"
)

// Synthesize runs Yosys (rtl/synth) on the design emitted in dir: top.sv
// with its parameter sources and library components, the ROM files read
// from dir as the simulator reads them. It returns the statistics (LUTs,
// flip-flops, cells) of the whole design; constant ROM contents are folded
// into the logic, as on an FPGA whose memories are initialised.
func Synthesize(ctx context.Context, dir string, opts synth.Options) (*synth.Stats, error) {
	d, err := LoadDesign(dir)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	srcs := map[string]string{}
	for _, name := range d.Sources {
		text, err := os.ReadFile(filepath.Join(abs, name))
		if err != nil {
			return nil, fmt.Errorf("emit: synthesize: %w", err)
		}
		srcs[filepath.Base(name)] = string(text)
	}
	top := d.Top
	if top == "" {
		top = "top"
	}
	return synth.Run(ctx, synth.Design{Top: top, Sources: srcs, Dir: abs}, opts)
}
