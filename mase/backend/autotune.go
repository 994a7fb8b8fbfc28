package backend

import (
	"os"
	"strings"
)

// XLAFlagsEnv is the environment variable XLA reads its debug options
// from, once per process, when the first plugin client is created.
const XLAFlagsEnv = "XLA_FLAGS"

// DefaultGPUAutotuneLevel is the XLA GPU autotuning level gomase asks for
// unless XLA_FLAGS already sets one. XLA's own default (4) times every
// candidate matmul and fusion algorithm at each compile: on an H100 it
// made a one-epoch IMDb run at 512 tokens spend 380 of its 394 s compiling
// 16 shapes; at level 0 (the libraries' heuristics, as PyTorch eager uses
// cuBLAS) the same run took 90 s, training 14–29% slower between compiles
// (docs/GPU.md). Long runs of few shapes can ask for level 4 back:
// XLA_FLAGS=--xla_gpu_autotune_level=4.
const DefaultGPUAutotuneLevel = "0"

// gpuXLAFlags returns XLA_FLAGS with gomase's autotuning level added when
// flags does not name one.
func gpuXLAFlags(flags string) string {
	if strings.Contains(flags, "xla_gpu_autotune_level") {
		return flags
	}
	return strings.TrimSpace(flags + " --xla_gpu_autotune_level=" + DefaultGPUAutotuneLevel)
}

// setGPUXLAFlags applies gpuXLAFlags to the process's XLA_FLAGS before a
// GPU plugin is loaded.
func setGPUXLAFlags() {
	os.Setenv(XLAFlagsEnv, gpuXLAFlags(os.Getenv(XLAFlagsEnv)))
}
