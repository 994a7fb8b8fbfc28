package backend

import "testing"

func TestDefaultIsGoBackend(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "")
	b, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "go" && b.Name() != "Go" {
		t.Logf("backend name %q", b.Name())
	}
	b2, _ := Default()
	if b != b2 {
		t.Error("Default must return one shared backend")
	}
}

func TestIsGoName(t *testing.T) {
	for name, want := range map[string]bool{"Go Backend": true, "go": true, "xla:cuda": false, "XLA (PJRT cuda)": false, "": false, "gopher": false} {
		if got := IsGoName(name); got != want {
			t.Errorf("IsGoName(%q) = %v, want %v", name, got, want)
		}
	}
	b, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if !IsGo(b) {
		t.Errorf("the default backend %q is not the Go backend", b.Name())
	}
}
