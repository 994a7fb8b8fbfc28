package backend

import (
	"os"
	"strings"
	"testing"
)

func TestEnableXLADump(t *testing.T) {
	t.Setenv(XLAFlagsEnv, "--xla_gpu_autotune_level=0")
	if err := EnableXLADump("/tmp/hlo dump"); err == nil || !strings.Contains(err.Error(), "without spaces") {
		t.Fatalf("a folder with a space: error %v", err)
	}
	if err := EnableXLADump("/tmp/hlo"); err != nil {
		t.Fatal(err)
	}
	if got, want := os.Getenv(XLAFlagsEnv), "--xla_gpu_autotune_level=0 --xla_dump_to=/tmp/hlo --xla_dump_hlo_as_text"; got != want {
		t.Fatalf("XLA_FLAGS = %q, want %q", got, want)
	}
	if err := EnableXLADump("/tmp/other"); err == nil || !strings.Contains(err.Error(), "already sets a dump folder") {
		t.Fatalf("a second dump folder: error %v", err)
	}
}
