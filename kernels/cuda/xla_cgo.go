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
)

var (
	registerMu sync.Mutex
	registered = map[string]bool{}
	// mxint8PTXC is the PTX the handler loads, kept for the process.
	mxint8PTXC *C.char
)

// RegisterMXInt8WithPJRT makes the MXINT8 kernel the handler of the
// custom-call target MXInt8Target in the CUDA PJRT plugin at pluginPath —
// the plugin the XLA backend loaded, which dlopen hands back as the same
// library — so that graphs compiled afterwards can call it (MXInt8Call).
// It opens the driver first; on a machine without one it fails with
// OpenDriver's error. Registering twice is a no-op.
func RegisterMXInt8WithPJRT(pluginPath string) error {
	dr, err := OpenDriver()
	if err != nil {
		return err
	}
	if err := MXInt8.Check(); err != nil {
		return err
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
		mxint8PTXC = C.CString(MXInt8.PTX)
	}
	C.gomase_xla_init(dr.d, mxint8PTXC)
	if err := registerHandler(api, MXInt8Target, C.gomase_xla_mxint8); err != nil {
		return fmt.Errorf("cuda: PJRT plugin %s: %w", pluginPath, err)
	}
	registered[pluginPath] = true
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

// fakePJRT builds the test's fake PJRT_Api and returns it with a reader
// of what its GPU extension was asked to register.
func fakePJRT(withGPUExtension, refuse bool) (api unsafe.Pointer, registered func() (name string, apiVersion int, handler unsafe.Pointer)) {
	b := func(v bool) C.int {
		if v {
			return 1
		}
		return 0
	}
	api = C.gomase_pjrt_fake(b(withGPUExtension), b(refuse))
	return api, func() (string, int, unsafe.Pointer) {
		var v C.int
		var h unsafe.Pointer
		name := C.GoString(C.gomase_pjrt_fake_registered(&v, &h))
		return name, int(v), h
	}
}

// mxint8Handler is the C handler of the MXINT8 custom call.
var mxint8Handler = unsafe.Pointer(C.gomase_xla_mxint8)
