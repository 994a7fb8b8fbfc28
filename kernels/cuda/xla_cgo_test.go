//go:build cgo && linux

package cuda

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

// TestRegisterWithFakePJRT registers the handlers with a fake PJRT_Api:
// the GPU extension is found behind another one in the chain and gets
// both targets, the untyped API version, their handlers and register args
// of 68 bytes (version 3's traits field included, zeroed), which the fake
// refuses below version 2's 64.
func TestRegisterWithFakePJRT(t *testing.T) {
	api, registered := fakePJRT(true, false)
	if err := registerAll(api); err != nil {
		t.Fatal(err)
	}
	got := registered()
	want := []fakeRegistration{{MXInt8Target, 0, 68, mxint8Handler}, {SDPATarget, 0, 68, sdpaHandler}}
	if len(got) != len(want) {
		t.Fatalf("registered %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("registration %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	api, _ = fakePJRT(false, false)
	if err := registerHandler(api, MXInt8Target, mxint8Handler); err == nil || !strings.Contains(err.Error(), "no GPU custom-call extension") {
		t.Errorf("a plugin without the GPU extension: %v", err)
	}
	api, _ = fakePJRT(true, true)
	if err := registerAll(api); err == nil || !strings.Contains(err.Error(), "refused the custom call: fake refusal") {
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
	if err := RegisterWithPJRT("/nonexistent/pjrt_plugin.so"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("registering without a driver or plugin: %v", err)
	}
	CallError() // clear
	if err := CallError(); err != nil {
		t.Errorf("CallError after clearing: %v", err)
	}
}

// TestSDPAHandlerPayload checks the SDPA handler's reading of payloads
// against SDPACall's, and its refusals.
func TestSDPAHandlerPayload(t *testing.T) {
	for _, c := range []SDPAConfig{
		{Batch: 32, Heads: 8, SeqQ: 128, SeqK: 128, HeadDim: 64, DType: dtypes.Float16},
		{Batch: 2, Heads: 3, SeqQ: 100, SeqK: 77, HeadDim: 128, DType: dtypes.Float32, Scale: -0.37, MaskDims: []int{2, 1, 1, 77}},
		{Batch: 2, Heads: 3, SeqQ: 100, SeqK: 77, HeadDim: 1, DType: dtypes.Float32, MaskDims: []int{1, 3, 100, 77}},
		{Batch: 2, Heads: 3, SeqQ: 100, SeqK: 77, HeadDim: 40, DType: dtypes.Float16, MaskDims: []int{2, 3, 100, 77}},
	} {
		call, err := SDPACall(c)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ParseSDPAConfig(call.Config)
		got, st, ok := parseSDPAPayload(call.Config)
		if !ok || !reflect.DeepEqual(got, want) || st != want.MaskStrides() {
			t.Errorf("payload %q read as %+v, strides %v, %v (want %+v, %v)", call.Config, got, st, ok, want, want.MaskStrides())
		}
	}
	for _, bad := range []string{
		"",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=bf16 scale=0x3e000000 mask=none",
		"b=2 h=4 sq=3 sk=5 d=129 dtype=f32 scale=0x3e000000 mask=none",
		"b=0 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000 mask=none",
		"b=300 h=300 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000 mask=none",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x00000000 mask=none",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x7f800000 mask=none",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x7fc00000 mask=none",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000 mask=7,0,0,1",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000 mask=5,0,0",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000 mask=5,0,0,1x",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000 mask=none trailing",
		strings.Repeat("b=2 ", 80),
	} {
		if _, _, ok := parseSDPAPayload(bad); ok {
			t.Errorf("payload %q accepted", bad)
		}
	}
}
