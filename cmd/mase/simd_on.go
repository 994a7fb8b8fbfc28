//go:build goexperiment.simd

package main

// simdKernels reports whether this binary was built with GOEXPERIMENT=simd,
// which turns on the Go backend's AVX2/AVX-512 matmul kernels and gomase's
// own SIMD kernels (attention, GELU, MXINT8, AdamW).
const simdKernels = true
