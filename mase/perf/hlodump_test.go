package perf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadHLODump reads the optimised modules of a dump folder in compile
// order, skips XLA's other files, and cuts a large module.
func TestReadHLODump(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"module_0002.jit_step.sm_9.0_gpu_after_optimizations.txt": "HloModule jit_step\nfusion.1 = f32[8,128]{1,0} fusion(...)",
		"module_0001.jit_fwd.sm_9.0_gpu_after_optimizations.txt":  "HloModule jit_fwd\n",
		"module_0001.jit_fwd.sm_9.0_gpu_before_optimizations.txt": "HloModule jit_fwd (before)\n",
		"module_0001.jit_fwd.sm_9.0_gpu_buffer_assignment.txt":    "allocations\n",
		"module_0003.jit_big.sm_9.0_gpu_after_optimizations.txt":  strings.Repeat("x", MaxHLOText+10),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mods, err := ReadHLODump(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
	if strings.Join(names, " ") != "jit_fwd.sm_9.0_gpu jit_step.sm_9.0_gpu jit_big.sm_9.0_gpu" {
		t.Fatalf("modules %v: want jit_fwd, jit_step, jit_big in compile order, after optimisations only", names)
	}
	if !strings.Contains(mods[1].Text, "fusion.1") || mods[1].Truncated {
		t.Errorf("jit_step: text %q, truncated %v", mods[1].Text, mods[1].Truncated)
	}
	if big := mods[2]; !big.Truncated || len(big.Text) != MaxHLOText || big.Bytes != MaxHLOText+10 {
		t.Errorf("jit_big: %d bytes kept of %d, truncated %v", len(big.Text), big.Bytes, big.Truncated)
	}
	if _, err := ReadHLODump(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing folder: no error")
	}
}
