package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNumberFlagsRefuseBadValues: NaN, infinities and out-of-range values
// stop every command at its flags, naming the flag and what it accepts,
// before any data is read or any model trained.
func TestNumberFlagsRefuseBadValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--warmup", "NaN"}, `invalid value "NaN" for flag -warmup: want a finite number in [0, 1)`},
		{[]string{"train", "--warmup", "1"}, `invalid value "1" for flag -warmup: want a finite number in [0, 1)`},
		{[]string{"train", "--lr", "0"}, `invalid value "0" for flag -lr: want a finite number in (0, 10]`},
		{[]string{"train", "--lr", "-Inf"}, `invalid value "-Inf" for flag -lr`},
		{[]string{"train", "--lora-alpha", "NaN"}, `invalid value "NaN" for flag -lora-alpha: want a finite number in [0, 1e+06]`},
		{[]string{"compress", "width", "--lr", "nan"}, `invalid value "nan" for flag -lr`},
		{[]string{"compress", "sparsity", "--sparsities", "0.5,NaN"}, `--sparsities: "NaN" is not a number in [0, 1]`},
		{[]string{"search", "--space", "mixed-precision", "--lambda", "NaN"}, `invalid value "NaN" for flag -lambda`},
		{[]string{"search", "--space", "toy", "--timeout", "-5s"}, `invalid value "-5s" for flag -timeout: want a duration of 0 or more`},
		{[]string{"search", "--space", "toy", "--lr", "+Inf"}, `invalid value "+Inf" for flag -lr`},
		{[]string{"emit", "--negative-slope", "NaN"}, `invalid value "NaN" for flag -negative-slope`},
		{[]string{"labs", "--timeout", "0s"}, `invalid value "0s" for flag -timeout: want a duration above 0`},
	} {
		start := time.Now()
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine ") {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%v: refused only after %v: the check comes after work", c.args, d)
		}
	}
}

// TestNumberFlagKeepsGoodValues: values inside the span are kept as given,
// the default stands when the flag is absent, and span ends behave as
// written (open or closed).
func TestNumberFlagKeepsGoodValues(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lr := number(fs, "lr", 1e-3, learningRates, "")
	w := number(fs, "warmup", 0.1, fractions, "")
	d := duration(fs, "timeout", time.Minute, false, "")
	if err := fs.Parse([]string{"--lr", "10", "--timeout", "0s"}); err != nil {
		t.Fatal(err)
	}
	if *lr != 10 || *w != 0.1 || *d != 0 {
		t.Errorf("lr %v, warmup %v, timeout %v", *lr, *w, *d)
	}
	for _, c := range []struct {
		s    span
		v    float64
		want bool
	}{
		{fractions, 0, true}, {fractions, 1, true}, {learningRates, 0, false}, {span{Min: 0, Max: 1, MaxOpen: true}, 1, false},
	} {
		if got := c.s.contains(c.v); got != c.want {
			t.Errorf("%s contains %v: %v", c.s, c.v, got)
		}
	}
}

// TestOutputPathsCheckedFirst: a chart, drawing or checkpoint that could
// not be written, or would be written under the wrong extension, stops the
// command before any training, sweep or search.
func TestOutputPathsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-folder", "chart.svg")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compress", "width", "--plot", filepath.Join(dir, "chart.png")}, "chart.png: unsupported file extension (allowed: .svg)"},
		{[]string{"compress", "sparsity", "--plot", missing}, "no folder " + filepath.Dir(missing)},
		{[]string{"search", "--space", "toy", "--plot", filepath.Join(dir, "best.PNG")}, "best.PNG: unsupported file extension (allowed: .svg)"},
		{[]string{"search", "--space", "toy", "--plot", dir}, "unsupported file extension (allowed: .svg)"},
		{[]string{"graph", "--model", "bert-tiny", "--draw", filepath.Join(dir, "g.png")}, "g.png: unsupported file extension (allowed: .svg, .html, .dot)"},
		{[]string{"train", "--out", dir}, "is a folder; give a file name"},
		{[]string{"train", "--out", filepath.Join(dir, "nope", "ckpt")}, "no folder"},
	} {
		start := time.Now()
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%v: refused only after %v", c.args, d)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the checks left files behind: %v", entries)
	}
	if err := checkOutputPath("--plot", filepath.Join(dir, "ok.SVG"), ".svg"); err != nil {
		t.Errorf("a writable .SVG path: %v", err)
	}
}
