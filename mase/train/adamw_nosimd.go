//go:build !(amd64 && goexperiment.simd)

package train

// applyVec has no SIMD version in this build: apply runs applyScalar.
func (adamConsts) applyVec(_, _, _, _ []float32) int { return 0 }
