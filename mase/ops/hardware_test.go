package ops

import (
	"slices"
	"testing"
)

// TestHardwareColumn: every hardware op names a module whose own file is
// the last of its files, and the files handed out are the caller's.
func TestHardwareColumn(t *testing.T) {
	if got := HardwareOps(); !slices.Equal(got, []string{"leaky_relu", "linear", "relu"}) {
		t.Errorf("HardwareOps() = %v", got)
	}
	for _, op := range HardwareOps() {
		c, ok := Hardware(op)
		if !ok || len(c.Files) == 0 || c.Files[len(c.Files)-1] != c.Module+".sv" {
			t.Errorf("Hardware(%q) = %+v, %v: want the module's file last", op, c, ok)
		}
		c.Files[0] = "changed.sv"
		if again, _ := Hardware(op); again.Files[0] == "changed.sv" {
			t.Errorf("Hardware(%q) handed out the table's own file list", op)
		}
	}
	if _, ok := Hardware("gelu"); ok {
		t.Error("gelu has a hardware component")
	}
}
