package cuda

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unsafe"

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

// deviceBuffers puts p on the device and allocates its output.
func deviceBuffers(tb testing.TB, c *Context, p *mxint8.Packed) (mant, exp, out *Buffer) {
	tb.Helper()
	var err error
	alloc := func(n int) *Buffer {
		b, err := c.Alloc(n)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { b.Free() })
		return b
	}
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
