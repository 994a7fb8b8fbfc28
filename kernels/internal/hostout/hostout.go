// Package hostout allocates the output tensor of a host kernel where its
// input lives.
package hostout

import (
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// Like returns a zeroed tensor of shape for the output of a kernel that
// reads like: when like lives on a backend whose buffers are host memory
// (the Go backend's: a computation's outputs, or shared buffers), in that
// backend's memory — taken from its buffer pool, whose pages are already
// mapped, and handed to the next computation without a copy — else an
// ordinary host tensor.
func Like(like *tensors.Tensor, shape shapes.Shape) *tensors.Tensor {
	if like != nil && (like.IsShared() || like.IsOnAnyDevice()) {
		if be, err := like.Backend(); err == nil && be.HasSharedBuffers() {
			if t, err := tensors.FromShapeForBackend(be, 0, shape); err == nil {
				return t
			}
		}
	}
	return tensors.FromShape(shape)
}
