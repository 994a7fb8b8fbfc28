package rtl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildRoot holds the compiled testbenches of this test run.
var buildRoot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gomase-rtl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildRoot = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireSimulator fails (never skips) when no simulator is installed: CI
// runs `make setup` first, which installs Verilator.
func requireSimulator(t *testing.T) *Simulator {
	t.Helper()
	sim, err := FindSimulator()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return sim
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*sharedBuild{}
)

type sharedBuild struct {
	once sync.Once
	b    *Build
	err  error
}

// build compiles tb once per test run (tests with the same testbench and
// parameters share the model).
func build(t *testing.T, tb Testbench) *Build {
	t.Helper()
	sim := requireSimulator(t)
	key := fmt.Sprintf("%s %v", tb.Top, tb.Params)
	buildsMu.Lock()
	sb := builds[key]
	if sb == nil {
		sb = &sharedBuild{}
		builds[key] = sb
	}
	buildsMu.Unlock()
	sb.once.Do(func() {
		dir, err := os.MkdirTemp(buildRoot, tb.Top+"-")
		if err != nil {
			sb.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		sb.b, sb.err = sim.NewBuild(ctx, tb, dir)
	})
	if sb.err != nil {
		t.Fatal(sb.err)
	}
	return sb.b
}

// runPass runs a build and fails the test unless the testbench passes.
func runPass(t *testing.T, b *Build, files map[string][]byte, seed uint32) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := b.Run(ctx, files, seed)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed {
		t.Fatalf("%s failed %d of %d checks:\n%s", b.Top, res.Failures, res.Checks, strings.Join(res.Mismatches, "\n"))
	}
	t.Logf("%s: %d checks passed (build %v, run %v, %s)", b.Top, res.Checks, b.Duration.Round(time.Millisecond), res.Duration.Round(time.Millisecond), b.Sim.Name)
	return res
}

func TestLint(t *testing.T) {
	requireSimulator(t)
	for _, c := range Components {
		if err := Lint(context.Background(), c); err != nil {
			t.Error(err)
		}
	}
}

func TestSkidBuffer(t *testing.T) {
	t.Parallel()
	runPass(t, build(t, Testbench{Top: "tb_skid_buffer"}), nil, 1)
}

func TestFixedCast(t *testing.T) {
	t.Parallel()
	runPass(t, build(t, Testbench{Top: "tb_fixed_cast"}), nil, 1)
}

func TestFixedReLU(t *testing.T) {
	t.Parallel()
	runPass(t, build(t, Testbench{Top: "tb_fixed_relu"}), nil, 2)
}

func TestFixedLeakyReLU(t *testing.T) {
	t.Parallel()
	runPass(t, build(t, Testbench{Top: "tb_fixed_leaky_relu"}), nil, 3)
}

// The ROM source streams a [5, 6] tensor with parallelism [3, 2] (zero
// padded to 6 words of 6 lanes), written by ROMFile/RowBeats.
func TestFixedParamSource(t *testing.T) {
	t.Parallel()
	b := build(t, Testbench{Top: "tb_fixed_param_source"})
	rng := rand.New(rand.NewPCG(4, 5))
	rows := randMatrix(rng, 5, 6, Format{8, 0})
	words := RowBeats(rows, 3, 2)
	var elems []int64
	for _, w := range words {
		elems = append(elems, w...)
	}
	runPass(t, b, map[string][]byte{"rom.dat": ROMFile(words, 8), "elems.hex": HexFile(elems, 8)}, 4)
}

// linearConfig is one parameter set of tb_fixed_linear.
type linearConfig struct {
	in, w, b, out        Format
	k, pk, n, pn, pt, gr int // gr: row groups streamed
}

func (c linearConfig) testbench() Testbench {
	return Testbench{Top: "tb_fixed_linear", Params: map[string]int{
		"IN_W": c.in.Width, "IN_F": c.in.Frac, "W_W": c.w.Width, "W_F": c.w.Frac,
		"B_W": c.b.Width, "B_F": c.b.Frac, "OUT_W": c.out.Width, "OUT_F": c.out.Frac,
		"K": c.k, "PK": c.pk, "N": c.n, "PN": c.pn, "PT": c.pt, "GROUPS": c.gr,
	}}
}

// The lab's fc1: Q5.3 everywhere, 4 -> 8, parallelism 4/4 (spec §8.3).
var labLinear = linearConfig{in: q53, w: q53, b: q53, out: q53, k: 4, pk: 4, n: 8, pn: 4, pt: 1, gr: 24}

// Mixed formats, padding on both dimensions, two rows per beat, saturation.
var oddLinear = linearConfig{in: Format{6, 2}, w: Format{5, 3}, b: Format{7, 1}, out: Format{7, 2},
	k: 5, pk: 2, n: 5, pn: 2, pt: 2, gr: 16}

func randMatrix(rng *rand.Rand, rows, cols int, f Format) [][]int64 {
	m := make([][]int64, rows)
	for i := range m {
		m[i] = make([]int64, cols)
		for j := range m[i] {
			m[i][j] = f.Min() + rng.Int64N(f.Max()-f.Min()+1)
		}
	}
	return m
}

// linearVectors draws random data for c, plants spec §9 item 39 when the
// formats are the lab's, and returns the testbench files and the expected
// output rows (Go model).
func linearVectors(c linearConfig, seed uint64) (map[string][]byte, [][]int64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	x := randMatrix(rng, c.gr*c.pt, c.k, c.in)
	w := randMatrix(rng, c.n, c.k, c.w)
	b := randMatrix(rng, 1, c.n, c.b)[0]
	if c == labLinear {
		x[0] = []int64{3, 6, 0, 1}
		w[0] = []int64{4, -8, 2, 1}
		w[1] = []int64{4, -8, 2, 1}
		b[0], b[1] = 2, 20
	}
	y := make([][]int64, len(x))
	for i, row := range x {
		y[i] = Linear(row, w, b, c.in, c.w, c.b, c.out)
	}
	flat := func(beats [][]int64) []int64 {
		var out []int64
		for _, beat := range beats {
			out = append(out, beat...)
		}
		return out
	}
	return map[string][]byte{
		"x.hex":      HexFile(flat(RowBeats(x, c.pk, c.pt)), c.in.Width),
		"y.hex":      HexFile(flat(RowBeats(y, c.pn, c.pt)), c.out.Width),
		"weight.dat": ROMFile(LinearWeightWords(w, c.pk, c.pn), c.w.Width),
		"bias.dat":   ROMFile(VectorWords(b, c.pn), c.b.Width),
	}, y
}

func TestFixedLinear(t *testing.T) {
	t.Parallel()
	files, y := linearVectors(labLinear, 1)
	if y[0][0] != -3 || y[0][1] != 15 {
		t.Fatalf("item 39 rows: y[0][:2] = %v, want [-3 15]", y[0][:2])
	}
	// the RTL must produce -3 and 15 on lanes 0 and 1 of the first beat
	runPass(t, build(t, labLinear.testbench()), files, 1)
}

func TestFixedLinearMixedFormats(t *testing.T) {
	t.Parallel()
	files, _ := linearVectors(oddLinear, 2)
	runPass(t, build(t, oddLinear.testbench()), files, 2)
}

// A planted wrong expectation must make the testbench fail: the checker
// really compares values.
func TestFixedLinearPlantedMismatch(t *testing.T) {
	t.Parallel()
	b := build(t, labLinear.testbench())
	files, y := linearVectors(labLinear, 1)
	lines := strings.Split(string(files["y.hex"]), "\n")
	lines[1] = Hex(y[0][1]+1, 8) // item 39's 15 -> 16
	files["y.hex"] = []byte(strings.Join(lines, "\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := b.Run(ctx, files, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || res.Failures != 1 || len(res.Mismatches) != 1 ||
		!strings.Contains(res.Mismatches[0], "beat 0 lane 1 got=15 want=16") {
		t.Fatalf("planted mismatch not reported exactly once: passed=%v failures=%d mismatches=%q", res.Passed, res.Failures, res.Mismatches)
	}
}

func TestParse(t *testing.T) {
	r := Parse("MISMATCH a got=1 want=2\nFAIL checks=9 mismatches=1\n")
	if r.Passed || r.Checks != 9 || r.Failures != 1 || len(r.Mismatches) != 1 {
		t.Errorf("Parse FAIL: %+v", r)
	}
	if r := Parse("PASS checks=3\n- tb.sv:1: Verilog $finish\n"); !r.Passed || r.Checks != 3 {
		t.Errorf("Parse PASS: %+v", r)
	}
	if r := Parse("Segmentation fault\n"); r.Passed {
		t.Error("Parse of a crash passed")
	}
}
