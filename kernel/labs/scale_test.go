package labs

import (
	"strings"
	"testing"
)

func TestParseScale(t *testing.T) {
	for in, want := range map[string]Scale{"quick": ScaleQuick, " Standard ": ScaleStandard, "FULL": ScaleFull} {
		if got, err := ParseScale(in); err != nil || got != want {
			t.Errorf("ParseScale(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "medium", "ful"} {
		if _, err := ParseScale(in); err == nil || !strings.Contains(err.Error(), "must be quick, standard or full") {
			t.Errorf("ParseScale(%q) = %v, want an error listing the scales", in, err)
		}
	}
}

func TestScaleFromEnv(t *testing.T) {
	cases := []struct {
		scale, quick, backend string
		want                  Scale
	}{
		{"", "", "", ScaleStandard},
		{"", "", "go", ScaleStandard},
		{"", "", "xla:cpu", ScaleStandard},
		{"", "", "xla:cuda", ScaleFull},
		{"", "1", "xla:cuda", ScaleQuick},
		{"standard", "1", "", ScaleStandard},
		{"full", "", "go", ScaleFull},
	}
	for _, c := range cases {
		t.Setenv(ScaleEnv, c.scale)
		t.Setenv(QuickEnv, c.quick)
		t.Setenv(BackendEnv, c.backend)
		if got, err := ScaleFromEnv(); err != nil || got != c.want {
			t.Errorf("%s=%q %s=%q %s=%q: scale %q, %v; want %q", ScaleEnv, c.scale, QuickEnv, c.quick, BackendEnv, c.backend, got, err, c.want)
		}
	}
	t.Setenv(ScaleEnv, "huge")
	if _, err := ScaleFromEnv(); err == nil || !strings.Contains(err.Error(), "GOMASE_SCALE=huge") {
		t.Errorf("ScaleFromEnv with GOMASE_SCALE=huge = %v, want an error naming it", err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("CurrentScale did not panic on an unknown GOMASE_SCALE")
		}
	}()
	CurrentScale()
}

func TestByScale(t *testing.T) {
	t.Setenv(QuickEnv, "")
	for sc, want := range map[Scale]int{ScaleQuick: 1, ScaleStandard: 2, ScaleFull: 3} {
		t.Setenv(ScaleEnv, string(sc))
		if got := ByScale(1, 2, 3); got != want {
			t.Errorf("ByScale at %s = %d, want %d", sc, got, want)
		}
	}
}

func TestIsGPUBackend(t *testing.T) {
	for spec, want := range map[string]bool{"xla:cuda": true, "XLA:CUDA": true, "stablehlo:rocm": true, "xla:cpu": false, "go": false, "": false, "cuda": false} {
		if got := IsGPUBackend(spec); got != want {
			t.Errorf("IsGPUBackend(%q) = %v, want %v", spec, got, want)
		}
	}
}
