package backend

import "testing"

func TestGPUXLAFlagsKeepsTheUsersLevel(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "--xla_gpu_autotune_level=0",
		"--xla_dump_to=/tmp/d":              "--xla_dump_to=/tmp/d --xla_gpu_autotune_level=0",
		"--xla_gpu_autotune_level=4":        "--xla_gpu_autotune_level=4",
		"--a=1 --xla_gpu_autotune_level=2 ": "--a=1 --xla_gpu_autotune_level=2 ",
	} {
		if got := gpuXLAFlags(in); got != want {
			t.Errorf("gpuXLAFlags(%q) = %q, want %q", in, got, want)
		}
	}
}
