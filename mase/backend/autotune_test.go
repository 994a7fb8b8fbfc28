package backend

import "testing"

func TestGPUXLAFlagsAddsTheAutotuneCache(t *testing.T) {
	const dir = "/c/gomase/xla-autotune"
	flag := "--xla_gpu_per_fusion_autotune_cache_dir=" + dir
	for _, tc := range []struct{ in, dir, want string }{
		{"", dir, flag},
		{"--xla_dump_to=/tmp/d", dir, "--xla_dump_to=/tmp/d " + flag},
		{"--xla_gpu_autotune_level=4", dir, "--xla_gpu_autotune_level=4 " + flag},
		{"--xla_gpu_per_fusion_autotune_cache_dir=/mine", dir, "--xla_gpu_per_fusion_autotune_cache_dir=/mine"},
		{"--a=1 --xla_gpu_autotune_level=0 ", dir, "--a=1 --xla_gpu_autotune_level=0 "},
		{"--xla_dump_to=/tmp/d", "", "--xla_dump_to=/tmp/d"},
	} {
		if got := gpuXLAFlags(tc.in, tc.dir); got != tc.want {
			t.Errorf("gpuXLAFlags(%q, %q) = %q, want %q", tc.in, tc.dir, got, tc.want)
		}
	}
}
