package emit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/filelock"
	"github.com/gomase/gomase/mase/scratch"
	"github.com/gomase/gomase/rtl"
)

// SimDir is the subdirectory of a design directory where Simulate builds
// and runs: the Verilator builds sim/obj and sim/obj-trace, a work folder
// per run (sim/run-PID-*, removed when it ends) for its vectors, and the
// last finished run's in.hex, expected.hex and out.hex.
const SimDir = "sim"

// SimOptions configure Simulate.
type SimOptions struct {
	// Vectors is the number of random input vectors (default 100).
	Vectors int
	// Seed picks the input vectors and the testbench's random stalls.
	Seed uint64
	// Wave, when set, builds with --trace and writes a VCD file there
	// (relative paths are relative to the current directory).
	Wave string
	// PValid and PReady are the percent of cycles the input driver offers a
	// beat and the output sink is ready (defaults 70 and 60; 100 and 100
	// stream at full rate).
	PValid, PReady int
	// Log, when set, receives progress lines (build, run).
	Log func(format string, args ...any)
}

// SimResult is the outcome of Simulate.
type SimResult struct {
	Vectors int // input vectors sent
	Matched int // vectors whose every output matched the Go model
	// Mismatches describes the first differing outputs (at most 20),
	// "vector 3 output 5: got -2 want 1", and protocol errors the
	// testbench reported.
	Mismatches []string
	// Beats and WantBeats are the output beats seen and expected.
	Beats, WantBeats int
	Built            bool          // a build ran (false: the cached model was used)
	BuildTime        time.Duration // compile time (0 when cached)
	RunTime          time.Duration // simulation time
	Output           string        // what the simulation printed
	Wave             string        // the VCD file written, if any
}

// OK reports whether every vector matched and the protocol checks passed.
func (r *SimResult) OK() bool {
	return r.Vectors > 0 && r.Matched == r.Vectors && len(r.Mismatches) == 0 && r.Beats == r.WantBeats
}

// Err is nil when OK, else an error saying how many vectors matched and
// naming the first mismatches and protocol errors.
func (r *SimResult) Err() error {
	if r.OK() {
		return nil
	}
	msg := fmt.Sprintf("emit: %d of %d vectors matched the Go model, %d output beats of %d expected", r.Matched, r.Vectors, r.Beats, r.WantBeats)
	if len(r.Mismatches) > 0 {
		msg += ":\n  " + strings.Join(r.Mismatches, "\n  ")
	}
	return errors.New(msg)
}

// The bounds of a simulation's test vectors: MaxVectors vectors at most,
// and MaxVectorElements input and output values in all (the vectors and the
// expected outputs are held in memory and written as hex files).
const (
	MaxVectors        = 1 << 20
	MaxVectorElements = 1 << 25
)

// Simulate runs the design that Verilog wrote into dir: it draws Vectors
// random input vectors (uniform over the input format's integers), builds
// top_tb with Verilator (cached in dir/sim until a source changes), streams
// them through the design with random stalls and backpressure, and compares
// every output element bit for bit with Design.Reference (the rtl integer
// models: floor rounding, saturation).
func Simulate(ctx context.Context, dir string, opts SimOptions) (*SimResult, error) {
	// The simulator runs in a subdirectory: every path it is given must
	// not depend on the working directory.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	d, err := LoadDesign(dir)
	if err != nil {
		return nil, err
	}
	if opts.Vectors == 0 {
		opts.Vectors = 100
	}
	if opts.Vectors < 0 || opts.Vectors > MaxVectors {
		return nil, fmt.Errorf("emit: %d vectors (allowed: 1 to %d)", opts.Vectors, MaxVectors)
	}
	if n := int64(opts.Vectors) * int64(d.Input.Size+d.Output.Size); n > MaxVectorElements {
		return nil, fmt.Errorf("emit: %d vectors of %d inputs and %d outputs are %d values (allowed: at most %d; fewer vectors)",
			opts.Vectors, d.Input.Size, d.Output.Size, n, MaxVectorElements)
	}
	if opts.PValid == 0 {
		opts.PValid = 70
	}
	if opts.PReady == 0 {
		opts.PReady = 60
	}
	if opts.PValid < 1 || opts.PValid > 100 || opts.PReady < 1 || opts.PReady > 100 {
		return nil, fmt.Errorf("emit: valid/ready percentages %d/%d: want 1..100", opts.PValid, opts.PReady)
	}
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	wave, err := checkWave(opts.Wave)
	if err != nil {
		return nil, err
	}
	simDir := filepath.Join(dir, SimDir)
	if err := os.MkdirAll(simDir, 0o755); err != nil {
		return nil, err
	}
	// Each run has its own work folder for its vectors and outputs, so
	// that runs on one design do not read each other's files.
	work, err := scratch.Dir(simDir, runPrefix)
	if err != nil {
		return nil, fmt.Errorf("emit: %w", err)
	}
	defer os.RemoveAll(work)
	workRel, err := filepath.Rel(dir, work)
	if err != nil {
		return nil, err
	}
	// Inputs and expected outputs.
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5eed))
	in, out := d.Input, d.Output
	xs := make([][]int64, opts.Vectors)
	want := make([][]int64, opts.Vectors)
	span := uint64(in.Format.Max() - in.Format.Min() + 1)
	for i := range xs {
		xs[i] = make([]int64, in.Size)
		for j := range xs[i] {
			xs[i][j] = in.Format.Min() + int64(rng.Uint64N(span))
		}
		if want[i], err = d.Reference(xs[i]); err != nil {
			return nil, err
		}
	}
	var inText bytes.Buffer
	for _, beat := range rtl.RowBeats(xs, in.Par0, in.Par1) {
		for _, v := range beat {
			inText.WriteString(rtl.Hex(v, in.Format.Width))
			inText.WriteByte('\n')
		}
	}
	wantBeats := rtl.RowBeats(want, out.Par0, out.Par1)
	var wantText bytes.Buffer
	for _, beat := range wantBeats {
		for i, v := range beat {
			if i > 0 {
				wantText.WriteByte(' ')
			}
			wantText.WriteString(rtl.Hex(v, out.Format.Width))
		}
		wantText.WriteByte('\n')
	}
	for name, data := range map[string][]byte{"in.hex": inText.Bytes(), "expected.hex": wantText.Bytes()} {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o644); err != nil {
			return nil, fmt.Errorf("emit: %w", err)
		}
	}
	res := &SimResult{Vectors: opts.Vectors, WantBeats: len(wantBeats)}
	// The build is shared: one run builds (or finds the build current)
	// under an exclusive lock, and runs keep a shared lock while they use
	// it, so that no run rebuilds it under another.
	lock, err := filelock.Acquire(filepath.Join(simDir, "build.lock"), true)
	if err != nil {
		return nil, fmt.Errorf("emit: %w", err)
	}
	defer lock.Release()
	exe, built, buildTime, err := build(ctx, dir, d, wave != "", logf)
	if err != nil {
		return nil, err
	}
	if err := lock.Share(); err != nil {
		return nil, fmt.Errorf("emit: %w", err)
	}
	res.Built, res.BuildTime = built, buildTime
	outFile := filepath.Join(workRel, "out.hex")
	inBeats := len(rtl.RowBeats(xs, in.Par0, in.Par1))
	// Generous: every beat may wait ~100/p cycles on both sides, and a
	// linear layer needs NB·KB cycles per row group.
	timeout := 1000 + (inBeats+len(wantBeats))*200*100/min(opts.PValid, opts.PReady)
	args := []string{
		"+in=" + filepath.Join(workRel, "in.hex"), "+out=" + outFile,
		fmt.Sprintf("+out_beats=%d", len(wantBeats)), fmt.Sprintf("+seed=%d", uint32(opts.Seed)),
		fmt.Sprintf("+p_valid=%d", opts.PValid), fmt.Sprintf("+p_ready=%d", opts.PReady),
		fmt.Sprintf("+timeout=%d", timeout),
	}
	if wave != "" {
		args = append(args, "+wave="+wave)
		res.Wave = wave
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = dir // the ROM sources read their .dat files from here
	logf("running %d vectors (%d input beats, %d output beats)", opts.Vectors, inBeats, len(wantBeats))
	start := time.Now()
	outText, runErr := cmd.CombinedOutput()
	res.RunTime = time.Since(start)
	res.Output = string(outText)
	rep := rtl.Parse(res.Output)
	if rep.Checks == 0 && !rep.Passed && rep.Failures == 0 {
		return res, fmt.Errorf("emit: the simulation printed no PASS/FAIL line (exit: %v):\n%s", runErr, rtl.Tail([]byte(res.Output), 3000))
	}
	for _, m := range rep.Mismatches {
		res.Mismatches = append(res.Mismatches, strings.TrimPrefix(m, "MISMATCH "))
	}
	gotBeats, err := readBeats(filepath.Join(dir, outFile), out)
	if err != nil {
		return res, err
	}
	if wave != "" {
		if info, err := os.Stat(wave); err != nil || !info.Mode().IsRegular() {
			return res, fmt.Errorf("emit: the simulation wrote no waveform to %s", wave)
		}
	}
	if err := publishRun(simDir, work); err != nil {
		return res, err
	}
	res.Beats = len(gotBeats)
	got := unBeat(gotBeats, out, opts.Vectors)
	for i := range want {
		ok := i < len(got)
		for j := range want[i] {
			if !ok && j > 0 {
				break
			}
			if i >= len(got) || got[i][j] != want[i][j] {
				ok = false
				if len(res.Mismatches) < 20 {
					if i >= len(got) {
						res.Mismatches = append(res.Mismatches, fmt.Sprintf("vector %d: no output", i))
					} else {
						res.Mismatches = append(res.Mismatches, fmt.Sprintf("vector %d output %d: got %d want %d (input %v)", i, j, got[i][j], want[i][j], xs[i]))
					}
				}
			}
		}
		if ok {
			res.Matched++
		}
	}
	if res.Matched < res.Vectors && len(res.Mismatches) == 0 {
		res.Mismatches = append(res.Mismatches, fmt.Sprintf("%d vectors did not match", res.Vectors-res.Matched))
	}
	return res, nil
}

// publishRun copies a run's vectors and outputs (in.hex, expected.hex,
// out.hex) into simDir, the record of the last run to finish, all three
// replaced together under a lock (atomicfile: a reader sees one run's).
func publishRun(simDir, work string) error {
	lock, err := filelock.Acquire(filepath.Join(simDir, "last.lock"), true)
	if err != nil {
		return fmt.Errorf("emit: %w", err)
	}
	defer lock.Release()
	var files []atomicfile.File
	for _, name := range []string{"in.hex", "expected.hex", "out.hex"} {
		data, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			return fmt.Errorf("emit: %w", err)
		}
		files = append(files, atomicfile.File{Path: filepath.Join(simDir, name), Data: data})
	}
	if err := atomicfile.Write(files...); err != nil {
		return fmt.Errorf("emit: %w", err)
	}
	return nil
}

// runPrefix begins the name of a run's work folder in SimDir (scratch.Dir:
// the pid of the process running it follows).
const runPrefix = "run-"

// checkWave checks a waveform path before any work: a file (new, or one
// to replace) in a folder that exists, named .vcd. It returns the
// absolute path ("" for none).
func checkWave(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	if filepath.Ext(path) != ".vcd" {
		return "", fmt.Errorf("emit: waveform %s: unsupported file extension (allowed: .vcd)", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if info, err := os.Stat(abs); err == nil && !info.Mode().IsRegular() {
		return "", fmt.Errorf("emit: waveform %s is a folder or special file (allowed: a file to write)", path)
	}
	if info, err := os.Stat(filepath.Dir(abs)); err != nil || !info.IsDir() {
		return "", fmt.Errorf("emit: waveform %s: no folder %s to write it in", path, filepath.Dir(abs))
	}
	return abs, nil
}

// readBeats parses the testbench's output file: one beat per line, lanes
// in hex, sign-extended from the output width.
func readBeats(path string, s Stream) ([][]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("emit: the simulation wrote no output: %w", err)
	}
	defer f.Close()
	var beats [][]int64
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != s.Lanes() {
			return nil, fmt.Errorf("emit: %s line %d has %d lanes, want %d", path, line, len(fields), s.Lanes())
		}
		beat := make([]int64, len(fields))
		for i, h := range fields {
			u, err := strconv.ParseUint(h, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("emit: %s line %d lane %d: %q is not hex (x or z in the output?)", path, line, i, h)
			}
			beat[i] = rtl.Wrap(int64(u), s.Format.Width)
		}
		beats = append(beats, beat)
	}
	return beats, sc.Err()
}

// unBeat is the inverse of rtl.RowBeats: beats back into rows of s.Size
// elements (at most rows of them; padding lanes and rows are dropped).
func unBeat(beats [][]int64, s Stream, rows int) [][]int64 {
	perGroup := (s.Size + s.Par0 - 1) / s.Par0
	var out [][]int64
	for g := 0; g*perGroup < len(beats); g++ {
		group := make([][]int64, s.Par1)
		for r := range group {
			group[r] = make([]int64, s.Size)
		}
		complete := (g+1)*perGroup <= len(beats)
		for b := 0; b < perGroup && g*perGroup+b < len(beats); b++ {
			beat := beats[g*perGroup+b]
			for r := range s.Par1 {
				for c := range s.Par0 {
					if j := b*s.Par0 + c; j < s.Size {
						group[r][j] = beat[r*s.Par0+c]
					}
				}
			}
		}
		if !complete {
			break
		}
		for _, row := range group {
			if len(out) < rows {
				out = append(out, row)
			}
		}
	}
	return out
}

// build compiles top_tb with Verilator into dir/sim/obj (obj-trace with
// trace), unless a build of the same sources and flags is there.
func build(ctx context.Context, dir string, d *Design, trace bool, logf func(string, ...any)) (exe string, built bool, took time.Duration, err error) {
	sim, err := rtl.FindSimulator()
	if err != nil {
		return "", false, 0, err
	}
	if sim.Name != "verilator" {
		return "", false, 0, fmt.Errorf("emit: the design testbench needs verilator (found only %s): %w", sim.Name, rtl.ErrNoSimulator)
	}
	objName := "obj"
	if trace {
		objName = "obj-trace"
	}
	obj := filepath.Join(SimDir, objName)
	args := append(rtl.VerilatorBinaryArgs("top_tb", obj, trace), "-I.")
	if trace {
		args = append(args, "+define+WAVE")
	}
	files := append([]string{d.Testbench}, d.Sources...)
	args = append(args, files...)
	h := sha256.New()
	fmt.Fprintln(h, sim.Version, strings.Join(args, "\x00"))
	for _, f := range append(files, d.ROMs...) {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", false, 0, fmt.Errorf("emit: %w (re-run mase emit)", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	stamp := hex.EncodeToString(h.Sum(nil))
	exe = filepath.Join(dir, obj, "Vtop_tb")
	stampFile := filepath.Join(dir, obj, "gomase.stamp")
	if old, err := os.ReadFile(stampFile); err == nil && string(old) == stamp {
		if _, err := os.Stat(exe); err == nil {
			logf("using the cached Verilator build in %s", filepath.Join(dir, obj))
			return exe, false, 0, nil
		}
	}
	os.RemoveAll(filepath.Join(dir, obj))
	logf("building with %s (%s)", sim.Version, strings.Join(files, " "))
	cmd := exec.CommandContext(ctx, sim.Path, args...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took = time.Since(start)
	if err != nil {
		return "", false, took, fmt.Errorf("emit: verilator build of %s failed: %v\n%s", dir, err, rtl.Tail(out, 4000))
	}
	if err := os.WriteFile(stampFile, []byte(stamp), 0o644); err != nil {
		return "", false, took, err
	}
	logf("built in %.1fs", took.Seconds())
	return exe, true, took, nil
}
