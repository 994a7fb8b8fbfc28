//go:build !(amd64 && goexperiment.simd)

package mxint8

import "github.com/gomlx/compute/dtypes/bfloat16"

// dequantizeVec has no SIMD version in this build: dequantize runs the
// scalar loop.
func dequantizeVec(_ []bfloat16.BFloat16, _ []int8, _ []uint8, _ int) int { return 0 }
