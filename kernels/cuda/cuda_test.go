package cuda

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomase/gomase/kernels/mxint8"
)

func TestPTXMatchesSources(t *testing.T) {
	if err := MXInt8.Check(); err != nil {
		t.Fatal(err)
	}
	edited := MXInt8
	edited.sources += "\n// an edit"
	if err := edited.Check(); err == nil || !strings.Contains(err.Error(), "generated from other sources") {
		t.Errorf("edited source: %v", err)
	}
	bare := MXInt8
	bare.PTX = strings.SplitN(MXInt8.PTX, "\n", 2)[1]
	if err := bare.Check(); err == nil || !strings.Contains(err.Error(), "make ptx") {
		t.Errorf("PTX without its hash line: %v", err)
	}
	renamed := MXInt8
	renamed.Entry = "gomase_other"
	if err := renamed.Check(); err == nil || !strings.Contains(err.Error(), "no entry gomase_other") {
		t.Errorf("missing entry: %v", err)
	}
	// Subnormal scales (exponents below 7) must not be flushed to zero,
	// nor the float16 kernel's subnormal inputs and outputs.
	for _, k := range []Kernel{MXInt8, SDPAFloat32, SDPAFloat16} {
		if err := k.Check(); err != nil {
			t.Error(err)
		}
		if strings.Contains(k.PTX, ".ftz") {
			t.Errorf("%s: the PTX flushes subnormals to zero", k.Name)
		}
	}
	// The SDPA kernel keeps its state in registers (no local memory) and
	// uses only dynamic shared memory, whose size Load and the handler set.
	if strings.Contains(sdpaPTX, ".local") || !strings.Contains(sdpaPTX, ".shared .align 16 .b8 gomase_sdpa_smem[") {
		t.Error("sdpa.ptx: local memory, or no dynamic shared array gomase_sdpa_smem")
	}
	if n := strings.Count(sdpaPTX, ".shared"); n != strings.Count(sdpaPTX, "ld.shared")+strings.Count(sdpaPTX, "st.shared")+1 {
		t.Errorf("sdpa.ptx declares static shared memory besides gomase_sdpa_smem")
	}
	if got := sdpaSharedBytes(128); got != 117760 || SDPAFloat32.DynamicShared != got {
		t.Errorf("shared memory at head_dim 128: %d bytes", got)
	}
	for d := 1; HostBuild && d <= 128; d++ {
		if sdpaSharedBytes(d) != 4*smemFloatsOnHost(d) {
			t.Fatalf("head_dim %d: Go counts %d bytes of shared memory, sdpa_block.h %d floats", d, sdpaSharedBytes(d), smemFloatsOnHost(d))
		}
	}
}

// packedCases are MXINT8 tensors of n values in groups of gs: random
// normal values with some groups scaled to the extremes of bfloat16's
// range (so exponents from 1 to 254 occur, subnormal scales included),
// zero and negative-zero groups, and a partial last group.
func packedCases(t testing.TB, n, gs int, rng *rand.Rand) *mxint8.Packed {
	t.Helper()
	vals := make([]float32, n)
	for g := 0; g*gs < n; g++ {
		scale := math.Ldexp(1, rng.IntN(250)-124)
		for i := g * gs; i < min((g+1)*gs, n); i++ {
			switch g % 7 {
			case 3:
				vals[i] = 0
			case 5:
				vals[i] = float32(math.Copysign(0, -1))
			default:
				vals[i] = float32(rng.NormFloat64() * scale)
			}
		}
	}
	p, err := mxint8.Pack(vals, gs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHostKernelBitExact runs the CUDA kernel's body on the host, as grids
// of several sizes would, against kernels/mxint8's reference.
func TestHostKernelBitExact(t *testing.T) {
	if !HostBuild {
		t.Skip("built without cgo: the kernel's host build needs a C compiler")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, gs := range []int{8, 16, 32, 64, 128, 256, 512} {
		for _, n := range []int{1, 3, gs, 4*gs + 3, 1 << 20} {
			p := packedCases(t, n, gs, rng)
			want := mxint8.DequantizeReference(p)
			for _, threads := range []int{1, 7, 256} {
				got, err := dequantizeOnHost(p.Mantissas(), p.Exponents(), gs, threads)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if got[i] != want[i].Bits() {
						t.Fatalf("group %d, n %d, %d threads: value %d (m %d, e %d) is %#04x, want %#04x",
							gs, n, threads, i, p.Mantissas()[i], p.Exponents()[i/gs], got[i], want[i].Bits())
					}
				}
			}
		}
	}
	// Every mantissa with every exponent (0 only for zeros).
	for e := 0; e <= mxint8.MaxExponent; e++ {
		m := make([]int8, 256)
		for i := range m {
			if e > 0 {
				m[i] = int8(i%255 - 127)
			}
		}
		p, err := mxint8.NewPacked(m, []uint8{uint8(e)}, 256)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dequantizeOnHost(m, []uint8{uint8(e)}, 256, 3)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range mxint8.DequantizeReference(p) {
			if got[i] != w.Bits() {
				t.Fatalf("m %d, e %d: %#04x, want %#04x", m[i], e, got[i], w.Bits())
			}
		}
	}
}
