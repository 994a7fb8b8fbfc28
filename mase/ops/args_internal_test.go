package ops

import (
	"testing"

	"github.com/gomase/gomase/mase/ir"
)

// TestEveryBuiltinHasASignature: a built-in function or method added to
// the table without its signature would import unchecked; a signature
// without an operator would check nothing.
func TestEveryBuiltinHasASignature(t *testing.T) {
	sigs := builtinSignatures()
	builtin := map[key]bool{}
	for _, op := range builtinOps() {
		if op.Kind == ir.CallModule {
			continue
		}
		builtin[key{op.Kind, op.Target}] = true
		if _, ok := sigs[key{op.Kind, op.Target}]; !ok {
			t.Errorf("%s %s has no signature in builtinSignatures", op.Kind, op.Target)
		}
	}
	for k, s := range sigs {
		if !builtin[k] {
			t.Errorf("signature of %s %s names no built-in operator", k.kind, k.target)
		}
		if s.required > len(s.args) {
			t.Errorf("%s %s: %d required of %d positional arguments", k.kind, k.target, s.required, len(s.args))
		}
		for _, p := range s.probability {
			if _, ok := s.kwargs[p]; !ok {
				t.Errorf("%s %s: probability %s is not a keyword", k.kind, k.target, p)
			}
		}
	}
}
