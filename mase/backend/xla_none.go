//go:build !(cgo && linux && (amd64 || arm64) && !noxla)

package backend

import (
	"errors"

	"github.com/gomlx/compute"
)

// XLAAvailable reports whether this binary includes GoMLX's XLA backend:
// not this one (built with CGO_ENABLED=0, the noxla tag, or for a platform
// other than linux/amd64 or linux/arm64).
const XLAAvailable = false

const xlaMissing = "this binary has no XLA backend (it was built without cgo, with the noxla tag, " +
	"or not for linux/amd64 or linux/arm64); rebuild it with a C compiler installed: " +
	"CGO_ENABLED=1 GOEXPERIMENT=simd go build -o bin/mase ./cmd/mase (docs/GPU.md)"

func openXLA(path, options string) (compute.Backend, error) {
	return nil, errors.New(xlaMissing)
}

func withCUDAKernels(be compute.Backend, pluginPath string) compute.Backend { return be }
