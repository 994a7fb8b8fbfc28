package compileopt

import "testing"

func TestRunsHostKernelsOnTheGoBackendOnly(t *testing.T) {
	for name, want := range map[string]bool{"Go Backend": true, "go": true, "xla:cuda": false, "XLA (PJRT cuda)": false, "": false, "gopher": false} {
		if got := runsHostKernels(name); got != want {
			t.Errorf("runsHostKernels(%q) = %v, want %v", name, got, want)
		}
	}
}
