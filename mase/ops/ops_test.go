package ops_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/ops"
)

func TestBuiltinTable(t *testing.T) {
	for _, name := range []string{"add", "matmul", "scaled_dot_product_attention", "linear", "dropout"} {
		if op, ok := ops.Lookup(ir.CallFunction, name); !ok || op.Lower == nil || op.Host != nil {
			t.Errorf("function %s: %+v, %v; want a lowering", name, op, ok)
		}
	}
	if op, ok := ops.Lookup(ir.CallMethod, "view"); !ok || op.Lower == nil {
		t.Errorf("method view: %+v, %v", op, ok)
	}
	if _, ok := ops.Lookup(ir.CallMethod, "linear"); ok {
		t.Error("linear is a function, not a method")
	}
	if op, ok := ops.Lookup(ir.CallModule, "Linear"); !ok || op.MaseOp != "linear" {
		t.Errorf("module class Linear: %+v, %v", op, ok)
	}
	hosts := ops.Names(ir.CallFunction, true)
	for _, name := range []string{ops.HostSDPA, ops.HostGELU, ops.HostMXInt8} {
		if !slices.Contains(hosts, name) {
			t.Errorf("host kernels %v lack %s", hosts, name)
		}
	}
	if slices.Contains(hosts, "add") {
		t.Errorf("host kernels %v hold a lowered function", hosts)
	}
}

func TestHostKernelKeepsMaseName(t *testing.T) {
	g := ir.New()
	q := g.MustAddNode(ir.Placeholder, "q", "q", nil, nil)
	n := g.MustAddNode(ir.CallFunction, "", ops.HostSDPA, []any{q, q, q}, nil)
	typ, op, err := ops.Infer(n, nil)
	if err != nil || typ != ops.TypeBuiltinFunc || op != "scaled_dot_product_attention" {
		t.Errorf("Infer(%s) = %s, %s, %v", ops.HostSDPA, typ, op, err)
	}
}

func TestRegister(t *testing.T) {
	host := func([]any, map[string]any) (any, error) { return nil, nil }
	if err := ops.Register(ops.Op{Kind: ir.CallFunction, Target: "test.register", MaseType: ops.TypeBuiltinFunc, MaseOp: "test", Host: host}); err != nil {
		t.Fatal(err)
	}
	if op, ok := ops.Lookup(ir.CallFunction, "test.register"); !ok || op.Host == nil {
		t.Errorf("registered op not found: %+v, %v", op, ok)
	}
	for _, tc := range []struct {
		op   ops.Op
		want string
	}{
		{ops.Op{Kind: ir.CallFunction, Target: "test.register", Host: host}, "already"},
		{ops.Op{Kind: ir.CallFunction, Target: "add", Host: host}, "already"},
		{ops.Op{Kind: ir.CallFunction, Target: ""}, "empty target"},
		{ops.Op{Kind: ir.CallFunction, Target: "test.none"}, "exactly one of Lower and Host"},
		{ops.Op{Kind: ir.CallMethod, Target: "test.m", Host: host}, "methods cannot run on the host"},
		{ops.Op{Kind: ir.CallModule, Target: "TestModule", MaseType: ops.TypeModule}, "MaseType and MaseOp only"},
		{ops.Op{Kind: ir.Placeholder, Target: "x"}, "allowed: call_function"},
		{ops.Op{Kind: ir.CallFunction, Target: "test.half", MaseType: ops.TypeBuiltinFunc, Host: host}, "both MaseType and MaseOp"},
	} {
		if err := ops.Register(tc.op); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register(%s %q): %v, want an error with %q", tc.op.Kind, tc.op.Target, err, tc.want)
		}
	}
	if err := ops.Unknown(ir.CallMethod, "frobnicate"); !strings.Contains(err.Error(), `method "frobnicate"`) || !strings.Contains(err.Error(), "view") {
		t.Errorf("Unknown: %v", err)
	}
}
