package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/gomase/gomase/mase/quant"
)

const quantUsage = "--format NAME [--width N] [--frac-width N] [--exponent-width N] [--exponent-bias N|none] [--exponent-bias-width N] " +
	"[--block-size N[,N...]] [--group-size N] [--floor] [--bipolar] [--stochastic] [--seed N] [--levels N] [--scaling-factor] [--] [VALUE...]"

// quantStdin is where `mase quant` reads values when none are given (a
// variable so tests can feed it).
var quantStdin io.Reader = os.Stdin

func init() {
	register(command{
		name:  "quant",
		usage: quantUsage,
		short: "quantise values with one of MASE's number formats (exact reference), one result per line",
		run:   runQuant,
	})
}

// flagName spells a Spec field as its command-line flag.
func flagName(field string) string { return "--" + strings.ReplaceAll(field, "_", "-") }

// runQuant is `mase quant`: the values (arguments, or stdin one per line)
// form one 1-D tensor, quantised with the format's exact reference
// (quant.Spec.Reference); each result is printed with %.17g. For mxint8
// each line is the int8 mantissa, the group's 8-bit exponent and the
// dequantised value, tab separated.
func runQuant(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("quant", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors come back as one line; -h prints to stdout
	var s quant.Spec
	intFlag := func(name, usage string, dst *int) {
		fs.Func(name, usage, func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("want an integer")
			}
			*dst = n
			return nil
		})
	}
	fs.StringVar(&s.Format, "format", "", "number format `NAME`: "+strings.Join(append(append([]string(nil), quant.Formats...), quant.Fixed), ", "))
	intFlag("width", "total bits per element (integer, minifloats, log, block formats; 1 for binary, 2 ternary, 8 mxint8)", &s.Width)
	intFlag("frac-width", "fractional bits (integer)", &s.FracWidth)
	intFlag("exponent-width", "exponent bits (minifloats, block_fp, block_minifloat)", &s.ExponentWidth)
	fs.Func("exponent-bias", "exponent bias `N`, or none for the format's default (minifloats, log, block_fp)", func(v string) error {
		if v == "none" || v == "None" {
			s.ExponentBias = nil
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want an integer or none")
		}
		s.ExponentBias = &n
		return nil
	})
	intFlag("exponent-bias-width", "bits of the shared per-block bias (block_minifloat, block_log)", &s.ExponentBiasWidth)
	fs.Func("block-size", "block `SIZES`, comma separated, -1 for the whole axis (block formats; the values are one axis, so the last entry counts)", func(v string) error {
		s.BlockSize = nil
		for _, part := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil {
				return fmt.Errorf("want a comma-separated list of integers, e.g. 16 or 1,16")
			}
			s.BlockSize = append(s.BlockSize, n)
		}
		return nil
	})
	intFlag("group-size", "values sharing one exponent (mxint8: 8, 16, 32, 64, 128, 256 or 512)", &s.GroupSize)
	fs.BoolVar(&s.Floor, "floor", false, "round down instead of half to even (integer)")
	fs.BoolVar(&s.Bipolar, "bipolar", false, "±1 instead of α·[x > 0] (binary)")
	fs.BoolVar(&s.Stochastic, "stochastic", false, "stochastic binarisation (binary), seeded by --seed")
	fs.Func("seed", "random seed `N` for --stochastic (binary)", func(v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("want a non-negative integer")
		}
		s.Seed = n
		return nil
	})
	intFlag("levels", "residual levels (binary_residual; default 2)", &s.Levels)
	fs.BoolVar(&s.ScalingFactor, "scaling-factor", false, "scale ±1 by α (ternary)")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage: mase quant %s\n(values come after the flags, or from stdin one per line; use -- before negative values)\n", quantUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return err
	}
	if s.Format == "" {
		return fmt.Errorf("--format is missing (allowed: %s)", strings.Join(append(append([]string(nil), quant.Formats...), quant.Fixed), ", "))
	}
	if err := s.ValidateNamed(flagName); err != nil {
		return err
	}
	values, err := quantValues(fs.Args())
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	if s.Format == quant.MXInt8 {
		// The last group is padded with zeros (which never change a group's
		// exponent), so any number of values can be typed; only the given
		// values are printed.
		n := len(values)
		if s.GroupSize > 0 && n%s.GroupSize != 0 {
			values = append(values, make([]float64, s.GroupSize-n%s.GroupSize)...)
		}
		m, scales, err := quant.MXInt8Quantize(values, s.GroupSize)
		if err != nil {
			return err
		}
		deq, err := quant.MXInt8Dequantize(m, scales, s.GroupSize)
		if err != nil {
			return err
		}
		for i := range n {
			fmt.Fprintf(w, "%d\t%d\t%.17g\n", m[i], scales[i/s.GroupSize], deq[i])
		}
		return w.Flush()
	}
	q, err := s.Reference(values, nil)
	if err != nil {
		return err
	}
	for _, v := range q {
		fmt.Fprintf(w, "%.17g\n", v)
	}
	return w.Flush()
}

// quantValues parses the values from the arguments, or from stdin (one per
// line, blank lines skipped) when there are none.
func quantValues(args []string) ([]float64, error) {
	type item struct{ text, where string }
	var items []item
	if len(args) > 0 {
		for i, a := range args {
			items = append(items, item{a, fmt.Sprintf("argument %d", i+1)})
		}
	} else {
		sc := bufio.NewScanner(quantStdin)
		for line := 1; sc.Scan(); line++ {
			if t := strings.TrimSpace(sc.Text()); t != "" {
				items = append(items, item{t, fmt.Sprintf("stdin line %d", line)})
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("reading values from stdin: %w", err)
		}
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("no values given (usage: mase quant %s; or one value per line on stdin)", quantUsage)
	}
	out := make([]float64, len(items))
	for i, it := range items {
		v, err := strconv.ParseFloat(it.text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("value %q (%s) is not a number (allowed: finite decimal numbers)", it.text, it.where)
		}
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("value %q (%s) is not finite (allowed: finite decimal numbers)", it.text, it.where)
		}
		out[i] = v
	}
	return out, nil
}
