//go:build !cgo

package cuda

import "fmt"

// HostBuild reports whether the kernels' C bodies are built for the host
// (this binary was built with cgo).
const HostBuild = false

func dequantizeOnHost([]int8, []uint8, int, int) ([]uint16, error) {
	return nil, fmt.Errorf("cuda: built without cgo: the kernels' host build needs a C compiler")
}

func sdpaOnHost[T float32 | uint16](SDPAConfig, []T, []T, []T, []float32) ([]T, error) {
	return nil, fmt.Errorf("cuda: built without cgo: the kernels' host build needs a C compiler")
}

func halfOnHost(float32) uint16  { return 0 }
func widenOnHost(uint16) float32 { return 0 }
func exp2OnHost(float32) float32 { return 0 }
func smemFloatsOnHost(int) int   { return 0 }
