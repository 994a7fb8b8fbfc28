//go:build cgo && linux && (amd64 || arm64) && !noxla

package backend

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/go-xla/pjrt"
	"github.com/gomlx/go-xla/stablehlo"

	"github.com/gomase/gomase/kernels/cuda"
)

// setField sets an unexported field of the struct *p points to.
func setField(p any, name string, value any) {
	f := reflect.ValueOf(p).Elem().FieldByName(name)
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(value))
}

// bareXLAFunction returns the main function of a go-xla Builder that has a
// StableHLO builder and a backend that passes go-xla's validity checks but
// holds no plugin (nothing can be compiled, which these tests never do).
func bareXLAFunction(sb *stablehlo.Builder) *xla.Function {
	be := &xla.Backend{}
	setField(be, "plugin", &pjrt.Plugin{})
	b := &xla.Builder{}
	setField(b, "builder", sb)
	setField(b, "backend", be)
	return xlaNewFunction(b, sb.Main(), compute.MainName)
}

// xlaNewFunction builds a go-xla Function on a bare StableHLO function, so
// that a graph can be emitted without a PJRT plugin.
//
//go:linkname xlaNewFunction github.com/gomlx/go-xla/compute/xla.newFunction
func xlaNewFunction(b *xla.Builder, fn *stablehlo.Function, name string) *xla.Function

func TestXLACustomCallPinned(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/gomlx/go-xla" {
			if f[1] != pinnedGoXLA {
				t.Fatalf("go.mod requires go-xla %s, but xlaCustomCall links to (*xla.Function).customCall as it is in %s: "+
					"check its signature in the new version, then update pinnedGoXLA", f[1], pinnedGoXLA)
			}
			return
		}
	}
	t.Fatal("go.mod does not require github.com/gomlx/go-xla")
}

func TestEmitXLARendersCustomCall(t *testing.T) {
	sb := stablehlo.New("kernels")
	fn := bareXLAFunction(sb)
	call, err := cuda.MXInt8Call(64, 32)
	if err != nil {
		t.Fatal(err)
	}
	m, err := fn.Parameter("m", call.Operands[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := fn.Parameter("e", call.Operands[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := emitXLA(fn, call, m, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn.Return(outs, nil); err != nil {
		t.Fatal(err)
	}
	program, err := sb.Build()
	if err != nil {
		t.Fatal(err)
	}
	text := string(program)
	for _, want := range []string{`call_target_name = "` + cuda.MXInt8Target + `"`, `backend_config = "n=64 group_size=32"`,
		"api_version = 2", "tensor<64xi8>", "tensor<2xui8>", "tensor<64xbf16>"} {
		if !strings.Contains(text, want) {
			t.Errorf("emitted program lacks %s:\n%s", want, text)
		}
	}
	if _, err := emitXLA(fn, call, m); err == nil {
		t.Error("emitXLA with one operand of two: no error")
	}
}
