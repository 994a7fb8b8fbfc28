package perf

import (
	"math"
	"testing"

	"github.com/gomase/gomase/mase/backend"
)

func TestMeasurePeaks(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	pk, err := MeasurePeaks(be, 128, 1<<16, 3)
	if err != nil {
		t.Fatal(err)
	}
	if pk.MatmulGFlops <= 0 || pk.CopyGBs <= 0 || pk.Ridge != pk.MatmulGFlops/pk.CopyGBs || pk.CopyBytes != 8<<16 {
		t.Errorf("peaks %+v", pk)
	}
	if _, err := MeasurePeaks(be, 8, 1<<16, 3); err == nil {
		t.Error("a matmul of 8 was accepted")
	}
}

func TestRooflineBounds(t *testing.T) {
	pk := &Peaks{MatmulGFlops: 100, CopyGBs: 10, Ridge: 10}
	p := &RunProfile{Stages: []StageProfile{
		{Name: "add", Flops: 0, ElementwiseFlops: 1000, Bytes: 12000, GFlopsPerS: 0.5},
		{Name: "mm", Flops: 64000, Bytes: 1600, GFlopsPerS: 60},
		{Name: "view"},
	}}
	pts := p.Roofline(pk)
	if len(pts) != 2 {
		t.Fatalf("points %+v: want add and mm", pts)
	}
	if pts[0].Bound != "memory" || math.Abs(pts[0].Attainable-1000.0/12000*10) > 1e-12 {
		t.Errorf("add: %+v", pts[0])
	}
	if pts[1].Bound != "compute" || pts[1].Attainable != 100 || pts[1].Intensity != 40 {
		t.Errorf("mm: %+v", pts[1])
	}
}

// TestPeaksBytes: the roofline's peaks hold three 1024² matrices and two
// arrays of 64 Mi floats, each on the host and the backend.
func TestPeaksBytes(t *testing.T) {
	if got, want := PeaksBytes(1024, 1<<26), int64(2*4*(3*1024*1024+2*(1<<26))); got != want || got != 1098907648 {
		t.Errorf("PeaksBytes = %d, want %d", got, want)
	}
}
