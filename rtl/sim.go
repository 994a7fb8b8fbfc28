package rtl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrNoSimulator is returned (wrapped) when neither Verilator nor a usable
// Icarus Verilog is on PATH.
var ErrNoSimulator = errors.New(`no HDL simulator: verilator is not on PATH; run "make setup" (it installs verilator, iverilog and yosys from Debian)`)

// Simulator is an HDL simulator found on PATH.
type Simulator struct {
	Name    string // "verilator" or "iverilog"
	Path    string // the executable
	Version string // first line of its version output
}

// iverilogOK lists the testbenches that Icarus Verilog 11 can run; the others
// need Verilator (SystemVerilog features Icarus lacks).
var iverilogOK = map[string]bool{"tb_skid_buffer": true}

// FindSimulator looks for verilator on PATH, then for iverilog (with vvp).
// The error wraps ErrNoSimulator when neither is there.
func FindSimulator() (*Simulator, error) {
	if p, err := exec.LookPath("verilator"); err == nil {
		return &Simulator{Name: "verilator", Path: p, Version: firstLine(p, "--version")}, nil
	}
	if p, err := exec.LookPath("iverilog"); err == nil {
		if _, err := exec.LookPath("vvp"); err == nil {
			return &Simulator{Name: "iverilog", Path: p, Version: firstLine(p, "-V")}, nil
		}
	}
	return nil, ErrNoSimulator
}

func firstLine(prog string, arg string) string {
	out, _ := exec.Command(prog, arg).CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// Testbench selects one testbench of tb/ and how to build it.
type Testbench struct {
	Top    string         // testbench module, one of Testbenches
	Params map[string]int // overrides of the testbench module's parameters
	// Trace builds the model with waveform tracing (Verilator --trace); each
	// Run then passes +trace, and testbenches that support it
	// (tb_skid_buffer, tb_fixed_relu) dump every signal to TraceFile in the
	// run directory (Result.VCD; parse it with package rtl/vcd).
	Trace bool
}

// TraceFile is the VCD file a traced testbench run writes in its directory.
const TraceFile = "dump.vcd"

// Build is a compiled testbench, ready to run any number of times.
type Build struct {
	Testbench
	Sim      *Simulator
	Dir      string        // holds the sources and the compiled model
	Duration time.Duration // time spent compiling
	exe      []string      // command that runs it (plusargs appended)
}

// Result is the outcome of one testbench run, parsed from its output.
type Result struct {
	Passed     bool          // the testbench printed PASS
	Checks     int           // checks made
	Failures   int           // failed checks (reported by the testbench)
	Mismatches []string      // the MISMATCH lines (the testbench prints the first 50)
	Output     string        // everything the simulation printed
	Duration   time.Duration // run time
	VCD        string        // the waveform dump, when built with Trace and the testbench wrote one
}

// VerilatorBinaryArgs are the Verilator 5 flags that build top as a
// self-running simulation binary (--binary --timing) in mdir, warnings not
// fatal, with --trace when asked: every testbench and emitted design is
// built this way. The C++ is compiled unoptimised: these models run for
// milliseconds, and -O0 compiles in a fraction of the time.
func VerilatorBinaryArgs(top, mdir string, trace bool) []string {
	args := []string{"--binary", "--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style",
		"--top-module", top, "--Mdir", mdir,
		"-MAKEFLAGS", "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0"}
	if trace {
		args = append(args, "--trace")
	}
	return args
}

// NewBuild compiles a testbench with the library into dir (created if
// needed). With Verilator the model is built with --binary --timing.
func (s *Simulator) NewBuild(ctx context.Context, tb Testbench, dir string) (*Build, error) {
	if !slices.Contains(Testbenches, tb.Top) {
		return nil, fmt.Errorf("rtl: unknown testbench %q", tb.Top)
	}
	if s.Name == "iverilog" && !iverilogOK[tb.Top] {
		return nil, fmt.Errorf("rtl: %s needs verilator (Icarus Verilog lacks the SystemVerilog it uses): %w", tb.Top, ErrNoSimulator)
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	lib, err := WriteLibrary(src)
	if err != nil {
		return nil, err
	}
	if err := writeTestbenches(src); err != nil {
		return nil, err
	}
	tbFile := filepath.Join(src, tb.Top+".sv")
	names := make([]string, 0, len(tb.Params))
	for k := range tb.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	b := &Build{Testbench: tb, Sim: s, Dir: dir}
	var cmd *exec.Cmd
	switch s.Name {
	case "verilator":
		obj := filepath.Join(dir, "obj")
		args := append(VerilatorBinaryArgs(tb.Top, obj, tb.Trace), "-I"+src)
		for _, k := range names {
			args = append(args, fmt.Sprintf("-G%s=%d", k, tb.Params[k]))
		}
		args = append(args, tbFile)
		args = append(args, lib...)
		cmd = exec.CommandContext(ctx, s.Path, args...)
		b.exe = []string{filepath.Join(obj, "V"+tb.Top)}
	case "iverilog":
		vvp := filepath.Join(dir, "sim.vvp")
		args := []string{"-g2012", "-s", tb.Top, "-I", src, "-o", vvp}
		for _, k := range names {
			args = append(args, fmt.Sprintf("-P%s.%s=%d", tb.Top, k, tb.Params[k]))
		}
		args = append(args, tbFile)
		args = append(args, lib...)
		cmd = exec.CommandContext(ctx, s.Path, args...)
		b.exe = []string{"vvp", "-n", vvp}
	default:
		return nil, fmt.Errorf("rtl: unknown simulator %q", s.Name)
	}
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	b.Duration = time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("rtl: building %s with %s: %v\n%s", tb.Top, s.Name, err, Tail(out, 4000))
	}
	return b, nil
}

// Run executes the compiled testbench in a fresh directory under the build
// directory, after writing files there (name -> contents; the testbenches
// read their vectors and ROM images from the working directory). seed picks
// the testbench's random stream.
func (b *Build) Run(ctx context.Context, files map[string][]byte, seed uint32) (*Result, error) {
	run, err := os.MkdirTemp(b.Dir, "run-")
	if err != nil {
		return nil, err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(run, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	args := append(append([]string(nil), b.exe[1:]...), fmt.Sprintf("+seed=%d", seed))
	if b.Trace {
		args = append(args, "+trace")
	}
	cmd := exec.CommandContext(ctx, b.exe[0], args...)
	cmd.Dir = run
	start := time.Now()
	out, runErr := cmd.CombinedOutput()
	res := Parse(string(out))
	res.Duration = time.Since(start)
	if b.Trace {
		if vcd := filepath.Join(run, TraceFile); fileExists(vcd) {
			res.VCD = vcd
		}
	}
	if res.Checks == 0 && !res.Passed && res.Failures == 0 {
		return res, fmt.Errorf("rtl: %s printed no PASS/FAIL line (crash or timeout; exit: %v):\n%s", b.Top, runErr, Tail(out, 4000))
	}
	return res, nil
}

var (
	passLine = regexp.MustCompile(`(?m)^PASS checks=(\d+)\s*$`)
	failLine = regexp.MustCompile(`(?m)^FAIL checks=(\d+) mismatches=(\d+)\s*$`)
)

// Parse reads the result protocol of tb/tb_report.svh from simulator output.
func Parse(out string) *Result {
	r := &Result{Output: out}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "MISMATCH ") {
			r.Mismatches = append(r.Mismatches, strings.TrimSpace(line))
		}
	}
	if m := passLine.FindStringSubmatch(out); m != nil {
		r.Checks, _ = strconv.Atoi(m[1])
		r.Passed = len(r.Mismatches) == 0 && failLine.FindString(out) == ""
	}
	if m := failLine.FindStringSubmatch(out); m != nil {
		r.Checks, _ = strconv.Atoi(m[1])
		r.Failures, _ = strconv.Atoi(m[2])
		r.Passed = false
	}
	return r
}

// RunTestbench finds a simulator, builds tb in a temporary directory, runs
// it once with files and seed, and removes the directory.
func RunTestbench(ctx context.Context, tb Testbench, files map[string][]byte, seed uint32) (*Result, error) {
	sim, err := FindSimulator()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gomase-rtl-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	b, err := sim.NewBuild(ctx, tb, dir)
	if err != nil {
		return nil, err
	}
	return b.Run(ctx, files, seed)
}

// Lint runs `verilator --lint-only -Wall` on one library component (with its
// dependencies) and returns the warnings; nil means clean.
func Lint(ctx context.Context, component string) error {
	p, err := exec.LookPath("verilator")
	if err != nil {
		return ErrNoSimulator
	}
	dir, err := os.MkdirTemp("", "gomase-lint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lib, err := WriteLibrary(dir)
	if err != nil {
		return err
	}
	args := append([]string{"--lint-only", "-Wall", "--top-module", component}, lib...)
	out, err := exec.CommandContext(ctx, p, args...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		return fmt.Errorf("rtl: verilator --lint-only -Wall %s: %v\n%s", component, err, Tail(out, 4000))
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Tail is the last n bytes of a tool's output, for error messages.
func Tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
