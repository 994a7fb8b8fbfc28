//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "cuda_driver.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/gomlx/compute/dtypes"
)

var (
	registerMu sync.Mutex
	registered = map[string]bool{}
	// mxint8PTXC and sdpaPTXC are the PTX the handlers load, kept for the
	// process.
	mxint8PTXC, sdpaPTXC *C.char
)

// RegisterWithPJRT makes gomase's kernels the handlers of their custom-call
// targets (MXInt8Target, SDPATarget) in the CUDA PJRT plugin at pluginPath
// — the plugin the XLA backend loaded, which dlopen hands back as the same
// library — so that graphs compiled afterwards can call them (MXInt8Call,
// SDPACall). It opens the driver first; on a machine without one it fails
// with OpenDriver's error. Registering twice is a no-op.
func RegisterWithPJRT(pluginPath string) error {
	dr, err := OpenDriver()
	if err != nil {
		return err
	}
	for _, k := range []Kernel{MXInt8, SDPAFloat32, SDPAFloat16} {
		if err := k.Check(); err != nil {
			return err
		}
	}
	registerMu.Lock()
	defer registerMu.Unlock()
	if registered[pluginPath] {
		return nil
	}
	path := C.CString(pluginPath)
	defer C.free(unsafe.Pointer(path))
	var api unsafe.Pointer
	if msg := C.gomase_pjrt_open(path, &api); msg != nil {
		return fmt.Errorf("cuda: PJRT plugin %s: %s", pluginPath, oneLine(C.GoString(msg)))
	}
	if mxint8PTXC == nil {
		mxint8PTXC, sdpaPTXC = C.CString(MXInt8.PTX), C.CString(sdpaPTX)
	}
	C.gomase_xla_init(dr.d, mxint8PTXC, sdpaPTXC)
	if err := registerAll(api); err != nil {
		return fmt.Errorf("cuda: PJRT plugin %s: %w", pluginPath, err)
	}
	registered[pluginPath] = true
	return nil
}

// handlers are the C handlers of the custom-call targets.
var handlers = []struct {
	target  string
	handler unsafe.Pointer
}{
	{MXInt8Target, unsafe.Pointer(C.gomase_xla_mxint8)},
	{SDPATarget, unsafe.Pointer(C.gomase_xla_sdpa)},
}

// registerAll registers every handler with api (a PJRT_Api).
func registerAll(api unsafe.Pointer) error {
	for _, h := range handlers {
		if err := registerHandler(api, h.target, h.handler); err != nil {
			return err
		}
	}
	return nil
}

// registerHandler registers a C handler under target with the GPU
// extension of api (a PJRT_Api).
func registerHandler(api unsafe.Pointer, target string, handler unsafe.Pointer) error {
	name := C.CString(target)
	defer C.free(unsafe.Pointer(name))
	if msg := C.gomase_pjrt_register(api, name, handler); msg != nil {
		return fmt.Errorf("registering the custom call %s: %s", target, oneLine(C.GoString(msg)))
	}
	return nil
}

// CallError returns and clears the error of the last failed custom call.
// XLA's untyped handlers report failures through a status setter that not
// every plugin exports; this is where they are kept in any case.
func CallError() error {
	var buf [512]C.char
	if C.gomase_xla_take_error(&buf[0], C.size_t(len(buf))) == 0 {
		return nil
	}
	return fmt.Errorf("cuda: custom call: %s", C.GoString(&buf[0]))
}

// parseMXInt8Payload is the handler's reading of a payload, for the tests.
func parseMXInt8Payload(payload string) (n, groupSize int, ok bool) {
	p := C.CString(payload)
	defer C.free(unsafe.Pointer(p))
	var cn C.longlong
	var cgs C.int
	if C.gomase_mxint8_parse(p, C.size_t(len(payload)), &cn, &cgs) != 0 {
		return 0, 0, false
	}
	return int(cn), int(cgs), true
}

// parseSDPAPayload is the handler's reading of an SDPA payload, for the tests:
// the config (dtype, sizes, scale, mask dimensions from the strides).
func parseSDPAPayload(payload string) (SDPAConfig, [4]int64, bool) {
	p := C.CString(payload)
	defer C.free(unsafe.Pointer(p))
	var a C.gomase_sdpa_args
	var half, masked C.int
	if C.gomase_sdpa_parse(p, C.size_t(len(payload)), &a, &half, &masked) != 0 {
		return SDPAConfig{}, [4]int64{}, false
	}
	c := SDPAConfig{Batch: int(a.batch), Heads: int(a.heads), SeqQ: int(a.seq_q), SeqK: int(a.seq_k), HeadDim: int(a.head_dim), DType: dtypes.Float32, Scale: float32(a.scale)}
	if half != 0 {
		c.DType = dtypes.Float16
	}
	var st [4]int64
	for i := range st {
		st[i] = int64(a.mask_stride[i])
	}
	if masked != 0 {
		full := []int{c.Batch, c.Heads, c.SeqQ, c.SeqK}
		c.MaskDims = make([]int, 4)
		for i := range full {
			c.MaskDims[i] = 1
			if st[i] != 0 {
				c.MaskDims[i] = full[i]
			}
		}
	}
	return c, st, true
}

// fakeRegistration is what the fake PJRT_Api was asked to register.
type fakeRegistration struct {
	name       string
	apiVersion int
	structSize int
	handler    unsafe.Pointer
}

// fakePJRT builds the test's fake PJRT_Api and returns it with a reader
// of what its GPU extension was asked to register.
func fakePJRT(withGPUExtension, refuse bool) (api unsafe.Pointer, registered func() []fakeRegistration) {
	b := func(v bool) C.int {
		if v {
			return 1
		}
		return 0
	}
	api = C.gomase_pjrt_fake(b(withGPUExtension), b(refuse))
	return api, func() []fakeRegistration {
		var out []fakeRegistration
		for i := C.int(0); ; i++ {
			var v C.int
			var size C.size_t
			var h unsafe.Pointer
			name := C.gomase_pjrt_fake_registered(i, &v, &size, &h)
			if name == nil {
				return out
			}
			out = append(out, fakeRegistration{C.GoString(name), int(v), int(size), h})
		}
	}
}

// mxint8Handler and sdpaHandler are the C handlers of the custom calls.
var (
	mxint8Handler = unsafe.Pointer(C.gomase_xla_mxint8)
	sdpaHandler   = unsafe.Pointer(C.gomase_xla_sdpa)
)
