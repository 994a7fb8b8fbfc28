package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/float16"

	"github.com/gomase/gomase/kernels/mxint8"
)

// TestOpenDriverError checks the one-line error of a machine without an
// NVIDIA driver (on a GPU machine the driver opens and this test skips).
func TestOpenDriverError(t *testing.T) {
	_, err := OpenDriver()
	if err == nil {
		t.Skip("an NVIDIA driver is here")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "cuda: ") || !strings.Contains(msg, "NVIDIA") {
		t.Errorf("want one line naming what is missing, got %q", msg)
	}
}

// device opens device 0's context on a locked thread, or skips the test.
func device(tb testing.TB) *Context {
	tb.Helper()
	dr, err := OpenDriver()
	if err != nil {
		tb.Skip(err)
	}
	runtime.LockOSThread()
	c, err := dr.Context(0)
	if err != nil {
		runtime.UnlockOSThread()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Error(err)
		}
		runtime.UnlockOSThread()
	})
	return c
}

// onThread locks the calling goroutine to its OS thread until tb ends and
// makes c current there: what a subtest or sub-benchmark, which runs on a
// goroutine of its own, does before it touches the device.
func onThread(tb testing.TB, c *Context) {
	tb.Helper()
	runtime.LockOSThread()
	tb.Cleanup(runtime.UnlockOSThread)
	if err := c.MakeCurrent(); err != nil {
		tb.Fatal(err)
	}
}

// deviceBuffers puts p on the device and allocates its output.
func deviceBuffers(tb testing.TB, c *Context, p *mxint8.Packed) (mant, exp, out *Buffer) {
	tb.Helper()
	var err error
	alloc := func(n int) *Buffer { return deviceAlloc(tb, c, n) }
	mant, exp, out = alloc(p.Len()), alloc(p.NumGroups()), alloc(2*p.Len())
	if err = mant.CopyIn(unsafe.Slice((*byte)(unsafe.Pointer(&p.Mantissas()[0])), p.Len())); err != nil {
		tb.Fatal(err)
	}
	if err = exp.CopyIn(p.Exponents()); err != nil {
		tb.Fatal(err)
	}
	return mant, exp, out
}

// TestDeviceMXInt8BitExact runs the kernel on the GPU for every group size
// on 10⁶ values (zeros, negative zeros, the extreme exponents included)
// against kernels/mxint8's reference. It skips without a GPU.
func TestDeviceMXInt8BitExact(t *testing.T) {
	c := device(t)
	m, err := c.Load(MXInt8)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, gs := range []int{8, 16, 32, 64, 128, 256, 512} {
		p := packedCases(t, 1_000_003, gs, rng)
		mant, exp, out := deviceBuffers(t, c, p)
		if err := m.DequantizeMXInt8(mant, exp, out, p.Len(), gs); err != nil {
			t.Fatal(err)
		}
		got := make([]uint16, p.Len())
		if err := out.CopyOut(unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), 2*len(got))); err != nil {
			t.Fatal(err)
		}
		for i, w := range mxint8.DequantizeReference(p) {
			if got[i] != w.Bits() {
				t.Fatalf("group %d: value %d (m %d, e %d) is %#04x, want %#04x", gs, i, p.Mantissas()[i], p.Exponents()[i/gs], got[i], w.Bits())
			}
		}
	}
}

// BenchmarkDeviceMXInt8 times the kernel on the GPU with device events at
// 64 Mi values in groups of 32 and reports the bytes it reads and writes
// per second.
func BenchmarkDeviceMXInt8(b *testing.B) {
	c := device(b)
	m, err := c.Load(MXInt8)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	p := packedCases(b, 64<<20, 32, rand.New(rand.NewPCG(9, 10)))
	mant, exp, out := deviceBuffers(b, c, p)
	if err := m.DequantizeMXInt8(mant, exp, out, p.Len(), 32); err != nil { // warm-up
		b.Fatal(err)
	}
	b.ResetTimer()
	d, err := m.TimeMXInt8(mant, exp, out, p.Len(), 32, max(b.N, 1))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(d.Nanoseconds()), "device-ns/op")
	b.ReportMetric(float64(p.Bytes()+2*p.Len())/d.Seconds()/1e9, "GB/s")
}

// sdpaOnDevice runs the case on the GPU and returns the output as float64
// and the device buffers q, k, v, mask (nil without one), out.
func (tc sdpaCase) sdpaOnDevice(tb testing.TB, c *Context, mods map[dtypes.DType]*Module) ([]float64, [5]*Buffer) {
	tb.Helper()
	alloc := func(n int) *Buffer { return deviceAlloc(tb, c, n) }
	half := tc.c.DType == dtypes.Float16
	put := func(x []float64) *Buffer {
		var raw []byte
		if half {
			h := make([]uint16, len(x))
			for i, f := range x {
				h[i] = uint16(float16.FromFloat32(float32(f)))
			}
			raw = unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 2*len(h))
		} else {
			f := make([]float32, len(x))
			for i := range x {
				f[i] = float32(x[i])
			}
			raw = unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
		}
		b := alloc(len(raw))
		if err := b.CopyIn(raw); err != nil {
			tb.Fatal(err)
		}
		return b
	}
	q, k, v := put(tc.q), put(tc.k), put(tc.v)
	var mask *Buffer
	if tc.mask != nil {
		mask = alloc(4 * len(tc.mask))
		if err := mask.CopyIn(unsafe.Slice((*byte)(unsafe.Pointer(&tc.mask[0])), 4*len(tc.mask))); err != nil {
			tb.Fatal(err)
		}
	}
	size := 4
	if half {
		size = 2
	}
	out := alloc(size * len(tc.q))
	if err := mods[tc.c.DType].SDPA(tc.c, q, k, v, mask, out); err != nil {
		tb.Fatal(err)
	}
	raw := make([]byte, size*len(tc.q))
	if err := out.CopyOut(raw); err != nil {
		tb.Fatal(err)
	}
	got := make([]float64, len(tc.q))
	for i := range got {
		if half {
			got[i] = float64(float16.Float16(uint16(raw[2*i]) | uint16(raw[2*i+1])<<8).Float32())
		} else {
			got[i] = float64(math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24))
		}
	}
	return got, [5]*Buffer{q, k, v, mask, out}
}

// loadSDPA loads both SDPA kernels.
func loadSDPA(tb testing.TB, c *Context) map[dtypes.DType]*Module {
	tb.Helper()
	mods := map[dtypes.DType]*Module{}
	for dt, k := range map[dtypes.DType]Kernel{dtypes.Float32: SDPAFloat32, dtypes.Float16: SDPAFloat16} {
		m, err := c.Load(k)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { m.Close() })
		mods[dt] = m
	}
	return mods
}

// TestDeviceSDPA runs the SDPA kernel on the GPU on the host tests' cases
// (float32 and float16, every mask form, fully masked rows) against
// sdpa.Reference: within 1e-5 (float32) and 2e-3 (float16). It skips
// without a GPU.
func TestDeviceSDPA(t *testing.T) {
	c := device(t)
	mods := loadSDPA(t, c)
	checkSDPACases(t, "on the device", func(tc sdpaCase) []float64 {
		got, _ := tc.sdpaOnDevice(t, c, mods)
		return got
	})
}

// BenchmarkDeviceSDPA times the SDPA kernel on the GPU with device events
// at [32, 8, 128, 64] (float32 and float16, without and with a key-padding
// mask) and reports milliseconds per call.
func BenchmarkDeviceSDPA(b *testing.B) {
	c := device(b)
	mods := loadSDPA(b, c)
	rng := rand.New(rand.NewPCG(12, 13))
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float16} {
		for _, masked := range []bool{false, true} {
			cfg := SDPAConfig{Batch: 32, Heads: 8, SeqQ: 128, SeqK: 128, HeadDim: 64, DType: dt}
			var fill func([]float32, []int)
			if masked {
				cfg.MaskDims = []int{32, 1, 1, 128}
				fill = padding
			}
			tc := newSDPACase("bench", cfg, rng, fill)
			b.Run(fmt.Sprintf("%s/mask=%v", dt, masked), func(b *testing.B) {
				onThread(b, c)                         // b.Run runs this on another goroutine
				_, bufs := tc.sdpaOnDevice(b, c, mods) // warm-up, and the buffers
				b.ResetTimer()
				d, err := mods[dt].TimeSDPA(cfg, bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], max(b.N, 1))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(d.Nanoseconds()), "device-ns/op")
				b.ReportMetric(d.Seconds()*1e3, "ms/call")
			})
		}
	}
}

// deviceAlloc allocates n bytes on the device, freed when the test ends.
func deviceAlloc(tb testing.TB, c *Context, n int) *Buffer {
	tb.Helper()
	b, err := c.Alloc(n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Free() })
	return b
}
