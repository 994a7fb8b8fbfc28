package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gomase/gomase/rtl/emit"
)

const simUsage = "DIR [--vectors N] [--seed S] [--wave FILE.vcd] [--p-valid P] [--p-ready P] [-v]"

func init() {
	register(command{
		name:  "sim",
		usage: simUsage,
		short: "simulate a design from `mase emit` with Verilator on random vectors, bit-exact against the Go fixed-point model",
		run:   runSim,
	})
}

// runSim is `mase sim DIR`: emit.Simulate on the directory `mase emit`
// wrote. It prints "N vectors, M matched" and fails (exit 1) on any
// mismatch or protocol error.
func runSim(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vectors := fs.Int("vectors", 1000, "random input vectors")
	seed := fs.Uint64("seed", 1, "seed of the input vectors and of the testbench's random stalls")
	wave := fs.String("wave", "", "write a VCD waveform to `FILE` (builds with verilator --trace)")
	pValid := fs.Int("p-valid", 70, "percent of cycles the input driver offers a beat (100: no gaps)")
	pReady := fs.Int("p-ready", 60, "percent of cycles the output is ready (100: no backpressure)")
	verbose := fs.Bool("v", false, "print progress (build, run) to stderr")
	// DIR may come before or after the flags.
	var dir string
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(stdout, "usage: mase sim %s\n", simUsage)
				fs.SetOutput(stdout)
				fs.PrintDefaults()
				return nil
			}
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		if dir != "" {
			return fmt.Errorf("unexpected arguments %q (one DIR only)", fs.Args())
		}
		dir, args = fs.Arg(0), fs.Args()[1:]
	}
	if dir == "" {
		return fmt.Errorf("DIR is missing: the directory `mase emit --out DIR` wrote")
	}
	if *vectors < 1 {
		return fmt.Errorf("--vectors %d: want ≥ 1", *vectors)
	}
	opts := emit.SimOptions{Vectors: *vectors, Seed: *seed, Wave: *wave, PValid: *pValid, PReady: *pReady}
	if *verbose {
		opts.Log = func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	}
	res, err := emit.Simulate(context.Background(), dir, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d vectors, %d matched (%d output beats of %d; build %s, run %.2fs)\n", res.Vectors, res.Matched, res.Beats, res.WantBeats,
		map[bool]string{true: fmt.Sprintf("%.1fs", res.BuildTime.Seconds()), false: "cached"}[res.Built], res.RunTime.Seconds())
	if res.Wave != "" {
		fmt.Fprintf(stdout, "waveform: %s\n", res.Wave)
	}
	if !res.OK() {
		for _, m := range res.Mismatches {
			fmt.Fprintf(stdout, "MISMATCH %s\n", m)
		}
		return fmt.Errorf("%d of %d vectors mismatched: %s", res.Vectors-res.Matched, res.Vectors, strings.Join(res.Mismatches[:min(3, len(res.Mismatches))], "; "))
	}
	return nil
}
