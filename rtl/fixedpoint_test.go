package rtl

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var q53 = Format{8, 3}

// Spec §9 item 39: the fixed_linear example in Q5.3 integers.
func TestLinearItem39(t *testing.T) {
	x := []int64{3, 6, 0, 1}
	w := [][]int64{{4, -8, 2, 1}, {4, -8, 2, 1}}
	if got := AccumulatorWidth(q53, q53, 4); got != 18 {
		t.Errorf("accumulator width = %d, want 18 (MMOUT)", got)
	}
	got := Linear(x, w, []int64{2, 20}, q53, q53, q53, q53)
	if !slices.Equal(got, []int64{-3, 15}) {
		t.Fatalf("Linear = %v, want [-3 15]", got)
	}
	if v := Value(got[0], q53); v != -0.375 {
		t.Errorf("y = %v, want -0.375", v)
	}
	if r := ReLU(got[0], q53, q53); r != 0 {
		t.Errorf("relu(-3) = %d, want 0", r)
	}
}

// Spec §9 item 40: ReLU and Leaky ReLU integer results.
func TestActivationsItem40(t *testing.T) {
	var relu []int64
	for _, x := range []int64{-3, 0, 5, -128} {
		relu = append(relu, ReLU(x, q53, q53))
	}
	if !slices.Equal(relu, []int64{0, 0, 5, 0}) {
		t.Errorf("relu = %v, want [0 0 5 0]", relu)
	}
	q84 := Format{8, 4}
	for _, c := range []struct{ x, want int64 }{{-64, -4}, {-1, -1}, {127, 127}, {0, 0}, {-128, -8}, {-17, -2}} {
		if got := LeakyReLU(c.x, q84, 1, 4, q84); got != c.want {
			t.Errorf("LeakyReLU(%d) = %d, want %d", c.x, got, c.want)
		}
	}
}

// Cast against a float model, over every 10-bit input and several formats.
func TestCast(t *testing.T) {
	formats := []Format{{8, 4}, {6, 2}, {12, 5}, {4, 1}, {12, 0}, {10, 9}, {3, 0}}
	from := Format{10, 3}
	for _, to := range formats {
		for v := from.Min(); v <= from.Max(); v++ {
			want := math.Floor(float64(v) * math.Ldexp(1, to.Frac-from.Frac))
			want = math.Min(math.Max(want, float64(to.Min())), float64(to.Max()))
			if got := Cast(v, from, to); float64(got) != want {
				t.Fatalf("Cast(%d, %v, %v) = %d, want %v", v, from, to, got, want)
			}
		}
	}
	// huge shifts saturate rather than overflow
	if got := Cast(5, Format{8, 0}, Format{8, 70}); got != 127 {
		t.Errorf("Cast with shift 70 = %d, want 127", got)
	}
	if got := Cast(-5, Format{8, 0}, Format{8, 62}); got != -128 {
		t.Errorf("Cast with shift 62 = %d, want -128", got)
	}
}

func TestQuantizeAndHex(t *testing.T) {
	// spec §9 item 11: floor(-0.3·8) = -3 -> 0xfd
	if got := Quantize(-0.3, q53); got != -3 || Hex(got, 8) != "fd" {
		t.Errorf("Quantize(-0.3, Q5.3) = %d (%s), want -3 (fd)", got, Hex(got, 8))
	}
	if Quantize(100, q53) != 127 || Quantize(-100, q53) != -128 {
		t.Error("Quantize does not saturate")
	}
	if Hex(-1, 18) != "3ffff" || Hex(5, 3) != "5" || Wrap(0xfd, 8) != -3 {
		t.Error("Hex/Wrap")
	}
}

// The ROM layout of spec §8.5 for the lab MLP: weight [8,4] with
// parallelism [4,4] gives 2 words of 32 hex digits, bias 2 words of 8.
func TestROMLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([][]int64, 8)
	for i := range w {
		w[i] = make([]int64, 4)
		for j := range w[i] {
			w[i][j] = rng.Int64N(256) - 128
		}
	}
	words := LinearWeightWords(w, 4, 4)
	if len(words) != 2 || !slices.Equal(words[1][:4], w[4]) {
		t.Fatalf("weight words = %v", words)
	}
	rom := string(ROMFile(words, 8))
	if len(rom) != 2*33 || rom[:2] != Hex(w[0][0], 8) {
		t.Errorf("weight ROM = %q", rom)
	}
	bias := ROMFile(VectorWords([]int64{1, 2, 3, 4, 5, 6, 7, -1}, 4), 8)
	if string(bias) != "01020304\n050607ff\n" {
		t.Errorf("bias ROM = %q", bias)
	}
	// widths that are not a multiple of 4: the word is packed bit by bit
	if got := string(ROMFile([][]int64{{-1, 0, 1}}, 5)); got != "7c01\n" {
		t.Errorf("5-bit ROM word = %q, want 7c01", got)
	}
	beats := RowBeats([][]int64{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, 2, 2)
	want := [][]int64{{1, 2, 4, 5}, {3, 0, 6, 0}, {7, 8, 0, 0}, {9, 0, 0, 0}}
	if len(beats) != len(want) {
		t.Fatalf("RowBeats = %v", beats)
	}
	for i := range want {
		if !slices.Equal(beats[i], want[i]) {
			t.Errorf("RowBeats[%d] = %v, want %v", i, beats[i], want[i])
		}
	}
}
