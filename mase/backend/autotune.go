package backend

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/gomase/gomase/mase/datadir"
)

// XLAFlagsEnv is the environment variable XLA reads its debug options
// from, once per process, when the first plugin client is created.
const XLAFlagsEnv = "XLA_FLAGS"

// autotuneCacheFlag names the folder where XLA keeps one file of autotuning
// results per fusion and reads them back at later compiles: a CUDA
// backend's compiles time every candidate algorithm (XLA's default level)
// the first time a fusion is seen on a machine, and not again. On an H200
// the autotuned bert-tiny forward at b64×512 ran 4.8× faster than with
// autotuning off, and a warm cache made the compiles faster than no
// autotuning at all (docs/GPU.md).
const autotuneCacheFlag = "xla_gpu_per_fusion_autotune_cache_dir"

// gpuXLAFlags returns XLA_FLAGS with the autotuning cache folder cacheDir
// added, unless cacheDir is empty or flags already names a cache folder or
// turns autotuning off.
func gpuXLAFlags(flags, cacheDir string) string {
	if cacheDir == "" || strings.Contains(flags, autotuneCacheFlag) || strings.Contains(flags, "xla_gpu_autotune_level=0") {
		return flags
	}
	return strings.TrimSpace(flags + " --" + autotuneCacheFlag + "=" + cacheDir)
}

// AutotuneCacheDir is the folder of XLA's autotuning results on this
// machine: xla-autotune in gomase's cache folder (datadir.CacheDir).
func AutotuneCacheDir() (string, error) {
	base, err := datadir.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "xla-autotune"), nil
}

// setGPUXLAFlags applies gpuXLAFlags to the process's XLA_FLAGS before a
// GPU plugin is loaded, creating the cache folder; without one (no cache
// directory, not writable) XLA autotunes at every compile.
func setGPUXLAFlags() {
	dir, err := AutotuneCacheDir()
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		dir = ""
	}
	os.Setenv(XLAFlagsEnv, gpuXLAFlags(os.Getenv(XLAFlagsEnv), dir))
}
