package labs

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Scale is how much work the lab notebooks do.
type Scale string

const (
	// ScaleQuick is CI's scale: every step on a small dataset with a few
	// sweep points and trials, minutes per notebook.
	ScaleQuick Scale = "quick"
	// ScaleStandard is every step and sweep of every lab on a reduced
	// dataset, sized to finish within an hour on two CPU cores: the
	// default without a GPU.
	ScaleStandard Scale = "standard"
	// ScaleFull is the labs' own scale (IMDb at 512 tokens, every sweep
	// point, the labs' trial counts): the default with a GPU backend.
	ScaleFull Scale = "full"
)

// Scales lists the scales, smallest first.
var Scales = []Scale{ScaleQuick, ScaleStandard, ScaleFull}

// ScaleEnv names the environment variable that sets the scale of the
// notebooks; `mase labs --scale` sets it for the kernels.
const ScaleEnv = "GOMASE_SCALE"

// BackendEnv is GoMLX's backend variable, which the kernels inherit.
const BackendEnv = "GOMLX_BACKEND"

// ErrUnknownScale is wrapped by the errors of an unknown scale name.
var ErrUnknownScale = errors.New("must be quick, standard or full")

// ParseScale reads a scale name (any case, surrounding spaces ignored).
func ParseScale(s string) (Scale, error) {
	v := Scale(strings.ToLower(strings.TrimSpace(s)))
	for _, sc := range Scales {
		if v == sc {
			return v, nil
		}
	}
	return "", fmt.Errorf("scale %q: %w", s, ErrUnknownScale)
}

// DefaultScale is the scale of a run that names none: full when
// GOMLX_BACKEND names a GPU backend (xla:cuda, say), standard otherwise.
func DefaultScale() Scale {
	if IsGPUBackend(os.Getenv(BackendEnv)) {
		return ScaleFull
	}
	return ScaleStandard
}

// IsGPUBackend reports whether a GOMLX_BACKEND value names a GPU: its
// plugin (what follows "xla:" or "stablehlo:") is CUDA or ROCm.
func IsGPUBackend(spec string) bool {
	_, plugin, ok := strings.Cut(strings.ToLower(strings.TrimSpace(spec)), ":")
	if !ok {
		return false
	}
	return strings.Contains(plugin, "cuda") || strings.Contains(plugin, "rocm") || strings.Contains(plugin, "gpu")
}

// ScaleFromEnv is the scale the notebooks run at: GOMASE_SCALE when set,
// quick when GOMASE_QUICK is on, DefaultScale otherwise. An unknown
// GOMASE_SCALE is an error.
func ScaleFromEnv() (Scale, error) {
	if v := os.Getenv(ScaleEnv); strings.TrimSpace(v) != "" {
		sc, err := ParseScale(v)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", ScaleEnv, v, ErrUnknownScale)
		}
		return sc, nil
	}
	if quickEnv() {
		return ScaleQuick, nil
	}
	return DefaultScale(), nil
}

// CurrentScale is ScaleFromEnv for notebooks; an unknown GOMASE_SCALE
// panics with ScaleFromEnv's one-line error (`mase labs` checks it before
// any kernel starts).
func CurrentScale() Scale {
	sc, err := ScaleFromEnv()
	if err != nil {
		panic(err.Error())
	}
	return sc
}

// ByScale returns quick, standard or full as CurrentScale says.
func ByScale[T any](quick, standard, full T) T {
	switch CurrentScale() {
	case ScaleQuick:
		return quick
	case ScaleStandard:
		return standard
	}
	return full
}

// Describe is how reports name a run's scale: "standard scale" ("" for
// the zero Scale).
func (s Scale) Describe() string {
	if s == "" {
		return ""
	}
	return string(s) + " scale"
}

// BackendName is the GoMLX backend the notebooks get: GOMLX_BACKEND, which
// the kernels inherit, or "go" when it is unset.
func BackendName() string {
	if b := strings.TrimSpace(os.Getenv(BackendEnv)); b != "" {
		return b
	}
	return "go"
}
