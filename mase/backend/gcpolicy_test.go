package backend

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestTuneGCRespectsTheUsersSettings(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(-1)
	defer func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	}()

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	set := TuneGC()
	if got := debug.SetGCPercent(100); got != TensorGCPercent {
		t.Fatalf("GOGC unset: GC percent %d, want %d", got, TensorGCPercent)
	}
	if !strings.Contains(set, "GOGC=400") {
		t.Fatalf("TuneGC() = %q, want it to name GOGC=400", set)
	}
	if total := totalMemory(); total > 0 {
		if got := debug.SetMemoryLimit(-1); got != int64(total/2) {
			t.Fatalf("GOMEMLIMIT unset: limit %d, want half of %d", got, total)
		}
	}

	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	if set := TuneGC(); set != "" {
		t.Fatalf("GOGC and GOMEMLIMIT set: TuneGC() = %q, want nothing changed", set)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set by the user: GC percent changed to %d", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Fatalf("GOMEMLIMIT set by the user: limit changed to %d", got)
	}
}
