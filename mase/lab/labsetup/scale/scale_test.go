package scale

import (
	"strings"
	"testing"
)

func TestParseScale(t *testing.T) {
	for in, want := range map[string]Scale{"quick": Quick, " Standard ": Standard, "FULL": Full} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "medium", "ful"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), "must be quick, standard or full") {
			t.Errorf("Parse(%q) = %v, want an error listing the scales", in, err)
		}
	}
}

func TestScaleFromEnv(t *testing.T) {
	cases := []struct {
		scale, quick, backend string
		want                  Scale
	}{
		{"", "", "", Standard},
		{"", "", "go", Standard},
		{"", "", "xla:cpu", Standard},
		{"", "", "xla:cuda", Full},
		{"", "1", "xla:cuda", Quick},
		{"standard", "1", "", Standard},
		{"full", "", "go", Full},
	}
	for _, c := range cases {
		t.Setenv(Env, c.scale)
		t.Setenv(QuickEnv, c.quick)
		t.Setenv(BackendEnv, c.backend)
		if got, err := FromEnv(); err != nil || got != c.want {
			t.Errorf("%s=%q %s=%q %s=%q: scale %q, %v; want %q", Env, c.scale, QuickEnv, c.quick, BackendEnv, c.backend, got, err, c.want)
		}
	}
	t.Setenv(Env, "huge")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "GOMASE_SCALE=huge") {
		t.Errorf("FromEnv with GOMASE_SCALE=huge = %v, want an error naming it", err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("Current did not panic on an unknown GOMASE_SCALE")
		}
	}()
	Current()
}

func TestByScale(t *testing.T) {
	t.Setenv(QuickEnv, "")
	for sc, want := range map[Scale]int{Quick: 1, Standard: 2, Full: 3} {
		t.Setenv(Env, string(sc))
		if got := By(1, 2, 3); got != want {
			t.Errorf("By at %s = %d, want %d", sc, got, want)
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

func TestIsQuick(t *testing.T) {
	t.Setenv(Env, "")
	t.Setenv(BackendEnv, "")
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "No": false, "off": false, "1": true, "true": true, "yes": true} {
		t.Setenv(QuickEnv, v)
		if got := IsQuick(); got != want {
			t.Errorf("%s=%q: IsQuick() = %v, want %v", QuickEnv, v, got, want)
		}
	}
}
