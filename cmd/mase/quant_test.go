package main

import (
	"strings"
	"testing"
)

func TestQuantCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Spec §9 item 9–10 (round half to even).
		{[]string{"--format", "integer", "--width", "8", "--frac-width", "4", "--", "0.3", "-10", "10", "0.09375", "0.15625"}, "0.3125\n-8\n7.9375\n0.125\n0.125\n"},
		{[]string{"--format=fixed", "--width=4", "--frac-width=2", "--", "-1.3", "1.9"}, "-1.25\n1.75\n"},
		{[]string{"--format", "integer", "--width", "8", "--frac-width", "3", "--floor", "--", "-0.3"}, "-0.375\n"},
		{[]string{"--format", "minifloat_ieee", "--width", "8", "--exponent-width", "4", "--", "0.3", "1000", "0.001", "1.99", "-2.7", "0"}, "0.3125\n480\n0.001953125\n1.875\n-2.75\n0\n"},
		// 13, with the exact 1.0 → 1.0.
		{[]string{"--format", "minifloat_denorm", "--width", "8", "--exponent-width", "4", "--exponent-bias", "none", "--", "0.3", "0.75", "1000", "-0.01", "1.0"}, "0.3125\n0.75\n224\n-0.009765625\n1\n"},
		{[]string{"--format", "log", "--width", "8", "--", "0.3", "-0.36", "3", "100", "0"}, "0.25\n-0.5\n4\n128\n1.0842021724855044e-19\n"},
		{[]string{"--format", "log", "--width", "4", "100", "0.01"}, "16\n0.125\n"},
		{[]string{"--format", "block_fp", "--width", "8", "--exponent-width", "8", "--block-size", "4", "--", "1.0", "0.5", "0.25", "-0.3"}, "0.9921875\n0.5\n0.25\n-0.296875\n"},
		{[]string{"--format", "block_fp", "--width", "4", "--exponent-width", "8", "--block-size", "1,4", "--", "1.0", "0.5", "0.25", "-0.3"}, "0.875\n0.5\n0.25\n-0.25\n"},
		{[]string{"--format", "block_log", "--width", "8", "--exponent-bias-width", "8", "--block-size", "4", "--", "3.0", "0.5", "0.25", "-0.3"}, "4\n0.5\n0.25\n-0.25\n"},
		{[]string{"--format", "block_minifloat", "--width", "8", "--exponent-width", "4", "--exponent-bias-width", "8", "--block-size", "4", "--", "0.9", "0.3", "-0.1", "0.05"}, "1\n0.25\n-0\n0\n"},
		{[]string{"--format", "binary", "--bipolar", "--", "0.3", "-0.2", "0"}, "1\n-1\n1\n"},
		{[]string{"--format", "binary", "--", "1", "-3", "2", "0"}, "1.5\n0\n1.5\n0\n"},
		{[]string{"--format", "binary_residual", "--", "0.5", "-2", "0.9", "0.2", "0"}, "0.33333333333333331\n-1\n1\n0.33333333333333331\n0\n"},
		{[]string{"--format", "ternary", "--scaling-factor", "--", "0.9", "-0.05", "0.3", "-0.6"}, "0.75\n0\n0\n-0.75\n"},
		{[]string{"--format", "mxint8", "--group-size", "8", "--", "-3", "2.5", "0.01", "0", "0", "0", "0", "0"},
			"-96\t128\t-3\n80\t128\t2.5\n0\t128\t0\n0\t128\t0\n0\t128\t0\n0\t128\t0\n0\t128\t0\n0\t128\t0\n"},
	} {
		code, out, stderr := runCLI(append([]string{"quant"}, tc.args...)...)
		if code != 0 || out != tc.want || stderr != "" {
			t.Errorf("mase quant %q: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, stderr, tc.want)
		}
	}
}

func TestQuantCommandStochasticIsSeeded(t *testing.T) {
	args := []string{"quant", "--format", "binary", "--stochastic", "--bipolar", "--seed", "7", "--", "0.1", "-0.1", "0.5", "-0.5", "0", "0.9"}
	code, a, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, b, _ := runCLI(args...)
	lines := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	if a != b || len(lines) != 6 {
		t.Errorf("seeded stochastic output %q then %q, want the same 6 lines", a, b)
	}
	for _, l := range lines {
		if l != "1" && l != "-1" {
			t.Errorf("stochastic bipolar printed %q, want ±1", l)
		}
	}
}

func TestQuantCommandStdin(t *testing.T) {
	old := quantStdin
	defer func() { quantStdin = old }()
	quantStdin = strings.NewReader("0.3\n\n  -10 \n10\n")
	code, out, stderr := runCLI("quant", "--format", "integer", "--width", "8", "--frac-width", "4")
	if code != 0 || out != "0.3125\n-8\n7.9375\n" {
		t.Errorf("stdin: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	quantStdin = strings.NewReader("0.3\nabc\n")
	code, _, stderr = runCLI("quant", "--format", "integer", "--width", "8", "--frac-width", "4")
	if code != 1 || !strings.Contains(stderr, `value "abc" (stdin line 2) is not a number`) {
		t.Errorf("bad stdin value: exit %d, stderr %q", code, stderr)
	}
	quantStdin = strings.NewReader("")
	code, _, stderr = runCLI("quant", "--format", "integer", "--width", "8", "--frac-width", "4")
	if code != 1 || !strings.Contains(stderr, "no values given") {
		t.Errorf("no values: exit %d, stderr %q", code, stderr)
	}
}

func TestQuantCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"1"}, "mase quant: --format is missing (allowed: integer, minifloat_ieee, minifloat_denorm, log, block_fp, block_minifloat, block_log, binary, binary_residual, ternary, mxint8, fixed)\n"},
		{[]string{"--format", "int8", "1"}, `mase quant: unknown quantisation format "int8" (allowed: integer,`},
		{[]string{"--format", "integer", "--width", "40", "1"}, "mase quant: --width 40 is out of range for integer (allowed: 1..32)\n"},
		{[]string{"--format", "integer", "--width", "8", "--frac-width", "9", "1"}, "mase quant: --frac-width 9 is out of range for integer (allowed: 0..8)\n"},
		{[]string{"--format", "integer", "--width", "abc", "1"}, `mase quant: invalid value "abc" for flag -width: want an integer` + "\n"},
		{[]string{"--format", "integer", "--width", "8", "--exponent-width", "3", "1"}, "mase quant: --exponent-width is not used by integer (it reads --width, --frac-width, --floor)\n"},
		{[]string{"--format", "block_fp", "--width", "8", "--exponent-width", "8", "--block-size", "1,x", "1"}, "want a comma-separated list of integers, e.g. 16 or 1,16"},
		{[]string{"--format", "block_fp", "--width", "8", "--exponent-width", "8", "1"}, "mase quant: --block-size [] for block_fp has 0 entries (allowed: 1..8 entries, each positive or -1)\n"},
		{[]string{"--format", "minifloat_ieee", "--width", "8", "--exponent-width", "4", "--exponent-bias", "x", "1"}, "want an integer or none"},
		{[]string{"--format", "mxint8", "--group-size", "24", "1"}, "mase quant: --group-size 24 is not supported by mxint8 (allowed: 8, 16, 32, 64, 128, 256, 512)\n"},
		{[]string{"--format", "log", "--width", "8", "--", "1", "x"}, `mase quant: value "x" (argument 2) is not a number (allowed: finite decimal numbers)` + "\n"},
		{[]string{"--format", "log", "--width", "8", "--", "1e999"}, `mase quant: value "1e999" (argument 1) is not finite`},
		{[]string{"--format", "log", "--width", "8", "--", "NaN"}, `mase quant: value "NaN" (argument 1) is not finite`},
		{[]string{"--format", "binary", "--seed", "-1", "1"}, "want a non-negative integer"},
		{[]string{"--frob"}, "mase quant: flag provided but not defined: -frob\n"},
	} {
		code, out, stderr := runCLI(append([]string{"quant"}, tc.args...)...)
		if code != 1 || out != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("mase quant %q: exit %d, stdout %q, stderr %q; want one line containing %q", tc.args, code, out, stderr, tc.want)
		}
	}
	// mxint8 pads the last group with zeros: acceptance 28 with three values typed.
	if code, out, stderr := runCLI("quant", "--format", "mxint8", "--group-size", "32", "--", "1.0", "0.3", "-0.1"); code != 0 ||
		out != "64\t127\t1\n19\t127\t0.296875\n-6\t127\t-0.09375\n" {
		t.Errorf("mxint8 padding: exit %d, %q, %s", code, out, stderr)
	}
	code, out, _ := runCLI("quant", "-h")
	if code != 0 || !strings.HasPrefix(out, "usage: mase quant --format NAME") || !strings.Contains(out, "-group-size") {
		t.Errorf("-h: exit %d, %q", code, out)
	}
}
