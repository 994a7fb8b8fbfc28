//go:build !goexperiment.simd

package main

// simdKernels reports whether this binary was built with GOEXPERIMENT=simd:
// this one was not.
const simdKernels = false
