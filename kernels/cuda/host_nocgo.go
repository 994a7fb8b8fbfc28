//go:build !cgo

package cuda

import "fmt"

// HostBuild reports whether the kernels' C bodies are built for the host
// (this binary was built with cgo).
const HostBuild = false

func dequantizeOnHost([]int8, []uint8, int, int) ([]uint16, error) {
	return nil, fmt.Errorf("cuda: built without cgo: the kernels' host build needs a C compiler")
}
