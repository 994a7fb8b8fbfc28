package searchbench

import (
	"math"
	"testing"
)

func TestRunSmall(t *testing.T) {
	res, err := Run(30, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range Objectives() {
		for _, s := range Samplers {
			r, ok := res[obj.Name+"_"+s].(Result)
			if !ok {
				t.Fatalf("no result for %s_%s", obj.Name, s)
			}
			if !(r.Best100 <= r.Best50 && r.Best50 <= r.Best25) || math.IsNaN(r.Best100) || r.MsPerTrial <= 0 {
				t.Errorf("%s_%s: %+v", obj.Name, s, r)
			}
		}
	}
	if _, err := Run(10, 1, nil); err == nil {
		t.Error("Run(10, 1): no error")
	}
	if _, err := Run(30, 1, []string{"nope"}); err == nil {
		t.Error("unknown sampler: no error")
	}
	if Median([]float64{3, 1, 2, 10}) != 2.5 || Median([]float64{5, 1, 3}) != 3 {
		t.Error("Median")
	}
}

// benchStudy runs one 100-trial study per iteration; ns/op ÷ 100 is the time per trial.
func benchStudy(b *testing.B, sampler string, obj Objective) {
	for i := 0; b.Loop(); i++ {
		s, err := NewSampler(sampler, int64(i))
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := Curve(obj.F, s, 100); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStudy100(b *testing.B) {
	for _, obj := range Objectives() {
		for _, s := range Samplers {
			b.Run(obj.Name+"/"+s, func(b *testing.B) { benchStudy(b, s, obj) })
		}
	}
}
