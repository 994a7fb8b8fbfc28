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
