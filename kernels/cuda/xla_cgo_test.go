//go:build cgo && linux

package cuda

import (
	"strings"
	"testing"
)

// TestRegisterWithFakePJRT registers the MXINT8 handler with a fake
// PJRT_Api: the GPU extension is found behind another one in the chain
// and gets the target, the untyped API version and the handler.
func TestRegisterWithFakePJRT(t *testing.T) {
	api, registered := fakePJRT(true, false)
	if err := registerHandler(api, MXInt8Target, mxint8Handler); err != nil {
		t.Fatal(err)
	}
	name, version, handler := registered()
	if name != MXInt8Target || version != 0 || handler != mxint8Handler {
		t.Errorf("registered %q, api_version %d, handler %p (want %q, 0, %p)", name, version, handler, MXInt8Target, mxint8Handler)
	}
	api, _ = fakePJRT(false, false)
	if err := registerHandler(api, MXInt8Target, mxint8Handler); err == nil || !strings.Contains(err.Error(), "no GPU custom-call extension") {
		t.Errorf("a plugin without the GPU extension: %v", err)
	}
	api, _ = fakePJRT(true, true)
	if err := registerHandler(api, MXInt8Target, mxint8Handler); err == nil || !strings.Contains(err.Error(), "refused the custom call: fake refusal") {
		t.Errorf("a refusal: %v", err)
	}
}

// TestHandlerPayload checks the handler's reading of the payload against
// MXInt8Call's, and the one-line error of registering on a machine without
// a driver or plugin.
func TestHandlerPayload(t *testing.T) {
	call, _ := MXInt8Call(123457, 64)
	if n, gs, ok := parseMXInt8Payload(call.Config); !ok || n != 123457 || gs != 64 {
		t.Errorf("payload %q read as %d, %d, %v", call.Config, n, gs, ok)
	}
	for _, bad := range []string{"", "n=0 group_size=32", "n=10 group_size=48", "n=10", strings.Repeat("n=1 ", 40)} {
		if _, _, ok := parseMXInt8Payload(bad); ok {
			t.Errorf("payload %q accepted", bad)
		}
	}
	if err := RegisterMXInt8WithPJRT("/nonexistent/pjrt_plugin.so"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("registering without a driver or plugin: %v", err)
	}
	CallError() // clear
	if err := CallError(); err != nil {
		t.Errorf("CallError after clearing: %v", err)
	}
}
