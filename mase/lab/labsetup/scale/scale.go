// Package scale says how much work the lab notebooks do (quick, standard
// or full), from GOMASE_SCALE, GOMASE_QUICK and the GoMLX backend. Notebooks
// read it through labsetup; `mase labs` sets it for the kernels.
package scale

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Scale is how much work the lab notebooks do.
type Scale string

const (
	// Quick is CI's scale: every step on a small dataset with a few
	// sweep points and trials, minutes per notebook.
	Quick Scale = "quick"
	// Standard is every step and sweep of every lab on a reduced
	// dataset, sized to finish within an hour on two CPU cores: the
	// default without a GPU.
	Standard Scale = "standard"
	// Full is the labs' own scale (IMDb at 512 tokens, every sweep
	// point, the labs' trial counts): the default with a GPU backend.
	Full Scale = "full"
)

// All lists the scales, smallest first.
var All = []Scale{Quick, Standard, Full}

// Env names the environment variable that sets the scale of the
// notebooks; `mase labs --scale` sets it for the kernels.
const Env = "GOMASE_SCALE"

// BackendEnv is GoMLX's backend variable, which the kernels inherit.
const BackendEnv = "GOMLX_BACKEND"

// ErrUnknown is wrapped by the errors of an unknown scale name.
var ErrUnknown = errors.New("must be quick, standard or full")

// Parse reads a scale name (any case, surrounding spaces ignored).
func Parse(s string) (Scale, error) {
	v := Scale(strings.ToLower(strings.TrimSpace(s)))
	for _, sc := range All {
		if v == sc {
			return v, nil
		}
	}
	return "", fmt.Errorf("scale %q: %w", s, ErrUnknown)
}

// Default is the scale of a run that names none: full when
// GOMLX_BACKEND names a GPU backend (xla:cuda, say), standard otherwise.
func Default() Scale {
	if IsGPUBackend(os.Getenv(BackendEnv)) {
		return Full
	}
	return Standard
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

// FromEnv is the scale the notebooks run at: GOMASE_SCALE when set,
// quick when GOMASE_QUICK is on, Default otherwise. An unknown
// GOMASE_SCALE is an error.
func FromEnv() (Scale, error) {
	if v := os.Getenv(Env); strings.TrimSpace(v) != "" {
		sc, err := Parse(v)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", Env, v, ErrUnknown)
		}
		return sc, nil
	}
	if quickEnv() {
		return Quick, nil
	}
	return Default(), nil
}

// Current is FromEnv for notebooks; an unknown GOMASE_SCALE
// panics with FromEnv's one-line error (`mase labs` checks it before
// any kernel starts).
func Current() Scale {
	sc, err := FromEnv()
	if err != nil {
		panic(err.Error())
	}
	return sc
}

// By returns quick, standard or full as Current says.
func By[T any](quick, standard, full T) T {
	switch Current() {
	case Quick:
		return quick
	case Standard:
		return standard
	}
	return full
}

// QuickEnv is the older switch for quick scale (GOMASE_QUICK=1);
// GOMASE_SCALE wins when both are set.
const QuickEnv = "GOMASE_QUICK"

// IsQuick reports whether notebooks run at quick scale (Current).
func IsQuick() bool { return Current() == Quick }

// quickEnv reports whether GOMASE_QUICK is set to anything but "", "0",
// "false", "no" or "off" (any case).
func quickEnv() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(QuickEnv))) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
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
