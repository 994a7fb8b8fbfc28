package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/rtl/emit"
)

const emitUsage = "--model mlp [--activation relu|leaky_relu] [--negative-slope F] [--width 8] [--frac-width 3] [--parallelism 4] [--seed S] [-v] --out DIR"

func init() {
	register(command{
		name:  "emit",
		usage: emitUsage,
		short: "quantize the hardware lab's MLP to fixed point and emit it as SystemVerilog (top.sv, ROMs, testbench) for `mase sim`",
		run:   runEmit,
	})
}

// runEmit is `mase emit`: the Lab 4 hardware flow (spec §8.1) — build the
// MLP, trace it, InitMetadata, AddCommonMetadata, quantize every tensor to
// fixed Q(width, frac) with floor rounding, AddHardwareMetadata with the
// max parallelism, then emit.Verilog into --out (design.json included, so
// `mase sim DIR` needs nothing else).
func runEmit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("emit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	model := fs.String("model", "mlp", "model `NAME` (mlp: the hardware lab's flatten → Linear(4, 8) → activation)")
	activation := fs.String("activation", models.ActivationReLU, "activation after fc1: relu or leaky_relu")
	slope := number(fs, "negative-slope", 0, slopes, "leaky_relu's negative_slope (0: torch's default 0.01)")
	width := fs.Int("width", 8, "fixed-point width of every tensor (bits, sign included)")
	frac := fs.Int("frac-width", 3, "fixed-point fraction bits of every tensor")
	par := fs.Int("parallelism", 4, "max parallelism of every dimension (elements per beat: min(this, size))")
	seed := fs.Uint64("seed", 0, "seed of the model's initialisation")
	out := fs.String("out", "", "output `DIR` (created)")
	verbose := fs.Bool("v", false, "print the passes' log lines to stderr")
	if err := parseFlagsOnly(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage: mase emit %s\n", emitUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return err
	}
	if *model != "mlp" {
		return fmt.Errorf("--model %q: only mlp has a hardware flow (allowed: mlp)", *model)
	}
	if *out == "" {
		return fmt.Errorf("--out DIR is missing")
	}
	if *par < 1 {
		return fmt.Errorf("--parallelism %d: want ≥ 1", *par)
	}
	m, err := models.NewMLPWith(*seed, models.MLPOptions{Activation: *activation, NegativeSlope: *slope})
	if err != nil {
		return err
	}
	saved := passes.Logger
	defer func() { passes.Logger = saved }()
	logTo := io.Discard
	if *verbose {
		logTo = stderr
	}
	passes.Logger = slog.New(slog.NewTextHandler(logTo, nil))
	mg, err := emit.Prepare(m, emit.PrepareOptions{DummyIn: emit.LabInput(), Width: *width, Frac: *frac, Parallelism: *par})
	if err != nil {
		return err
	}
	d, err := emit.Verilog(mg, *out, emit.Options{})
	if err != nil {
		return err
	}
	var chain []string
	for _, l := range d.Layers {
		chain = append(chain, fmt.Sprintf("%s (%s)", l.Node, l.Module))
	}
	fmt.Fprintf(stdout, "emitted %s: %s\n", *out, strings.Join(chain, " → "))
	fmt.Fprintf(stdout, "ports: data_in_0 %d×%s (%d per vector), data_out_0 %d×%s (%d per vector); %d top parameters\n",
		d.Input.Lanes(), d.Input.Format, d.Input.Size, d.Output.Lanes(), d.Output.Format, d.Output.Size, len(d.TopParams))
	fmt.Fprintf(stdout, "files: %s %s %s %s\n", strings.Join(d.Sources, " "), strings.Join(d.ROMs, " "), d.Testbench, emit.DesignFile)
	return nil
}
