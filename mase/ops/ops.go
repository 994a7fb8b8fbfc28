// Package ops is gomase's table of operators: for each call_function,
// call_method and call_module target it knows, MASE's name for the
// operator (mase_type, mase_op), how it lowers to GoMLX operations, or the
// host kernel that runs it on materialised tensors between compiled
// segments (a graph break), whether it is a view or a no-op (Class), and
// what a node of it costs in FLOPs and bytes (Cost; see cost.go).
//
// The tracer checks the targets it records against the table, execute
// lowers call_function and call_method nodes with it, passes infers
// operators with it (Infer), and compiled mode's rewrites insert its host
// kernels, eager mode folds the views it marks, and passes.AddCostMetadata
// costs each node with it (NodeCostOf). The built-in entries are listed in
// this package; Register adds one (a user's function or host kernel)
// explicitly.
package ops

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// Lowering turns one call_function or call_method node into GoMLX
// operations. c carries the graph, the model store's scope and the mode
// (c.Training; c.Random in train mode); args and kwargs are the node's
// arguments with every node replaced by its value (a *graph.Node, a Go
// constant, or a []any tuple of those).
type Lowering func(c *nn.Call, args []any, kwargs map[string]any) (any, error)

// HostKernel runs a call_function node on the host: Go code on
// materialised tensors rather than GoMLX operations. args and kwargs are
// the node's arguments with every node replaced by its value (a
// *tensors.Tensor, a Go constant, or a []any tuple of those); the result is
// a tensor or a tuple of tensors.
//
// A graph holding such a node cannot be one GoMLX computation: compiled
// mode splits it into compiled segments with the host node between them
// (execute.NewSegmented); eager mode runs it like any other node.
type HostKernel func(args []any, kwargs map[string]any) (any, error)

// Op is one entry of the table.
type Op struct {
	// Kind is ir.CallFunction, ir.CallMethod or ir.CallModule.
	Kind ir.OpKind
	// Target is the function or method name, or the module's class name.
	Target string
	// MaseType and MaseOp are MASE's operator inference result
	// (common.mase_type, common.mase_op). Empty: Infer applies MASE's name
	// matching rules to Target.
	MaseType, MaseOp string
	// Lower lowers a function or method to GoMLX operations. Modules lower
	// through their nn.Leaf Forward and have none.
	Lower Lowering
	// Host runs a function on the host instead of lowering it (set for
	// host kernels only, never together with Lower).
	Host HostKernel
	// Class marks views (a reshape, permute, slice or shape query: no
	// kernel in PyTorch) and no-ops (Identity; dropout in eval mode,
	// ClassEvalNoOp): they cost nothing, and eager mode folds the views
	// of functions and methods into their producer's stage
	// (IsView). The zero value is ClassCompute.
	Class Class
	// Cost computes a node's FLOPs and bytes from its common metadata
	// (see Cost and NodeCostOf). Every built-in entry has one; without
	// it a node is counted as its bytes moved and no FLOPs.
	Cost CostFunc
}

type key struct {
	kind   ir.OpKind
	target string
}

var (
	mu    sync.RWMutex
	table map[key]Op
	// builtins fills table with the built-in entries on first use.
	builtins = sync.OnceFunc(func() {
		table = map[key]Op{}
		for _, op := range builtinOps() {
			if err := add(op); err != nil {
				panic("ops: built-in table: " + err.Error())
			}
		}
	})
)

// builtinOps lists the built-in entries: torch functions and tensor
// methods with their lowering, gomase's host kernels, and the module
// classes of MASE's operator inference, each with its class and cost
// (cost.go).
func builtinOps() []Op {
	var out []Op
	for target, lower := range torchFunctions() {
		out = append(out, Op{Kind: ir.CallFunction, Target: target, Lower: lower})
	}
	for target, lower := range tensorMethods() {
		out = append(out, Op{Kind: ir.CallMethod, Target: target, Lower: lower})
	}
	out = append(out, hostKernels()...)
	for class, name := range moduleOps {
		out = append(out, Op{Kind: ir.CallModule, Target: class, MaseType: name[0], MaseOp: name[1]})
	}
	return withCosts(out)
}

// Register adds op to the table. The target must be new for its kind; a
// function or method needs exactly one of Lower and Host (methods cannot
// run on the host), a module class neither.
func Register(op Op) error {
	builtins()
	return add(op)
}

func add(op Op) error {
	if op.Target == "" {
		return fmt.Errorf("ops.Register: empty target")
	}
	switch op.Kind {
	case ir.CallFunction:
		if (op.Lower == nil) == (op.Host == nil) {
			return fmt.Errorf("ops.Register: function %q needs exactly one of Lower and Host", op.Target)
		}
	case ir.CallMethod:
		if op.Lower == nil || op.Host != nil {
			return fmt.Errorf("ops.Register: method %q needs Lower (methods cannot run on the host)", op.Target)
		}
	case ir.CallModule:
		if op.Lower != nil || op.Host != nil || op.MaseType == "" || op.MaseOp == "" {
			return fmt.Errorf("ops.Register: module class %q takes MaseType and MaseOp only, with its Class and Cost (modules lower through their Forward)", op.Target)
		}
	default:
		return fmt.Errorf("ops.Register: %q has kind %q (allowed: %s, %s, %s)", op.Target, op.Kind, ir.CallFunction, ir.CallMethod, ir.CallModule)
	}
	if op.Class > ClassEvalNoOp {
		return fmt.Errorf("ops.Register: %q has class %s (allowed: %s, %s, %s, %s)", op.Target, op.Class, ClassCompute, ClassView, ClassNoOp, ClassEvalNoOp)
	}
	if (op.MaseType == "") != (op.MaseOp == "") {
		return fmt.Errorf("ops.Register: %q: give both MaseType and MaseOp, or neither", op.Target)
	}
	mu.Lock()
	defer mu.Unlock()
	k := key{op.Kind, op.Target}
	if _, ok := table[k]; ok {
		return fmt.Errorf("ops.Register: %s %q is in the table already", op.Kind, op.Target)
	}
	table[k] = op
	return nil
}

// Lookup returns the entry of a target of the given kind.
func Lookup(kind ir.OpKind, target string) (Op, bool) {
	builtins()
	mu.RLock()
	defer mu.RUnlock()
	op, ok := table[key{kind, target}]
	return op, ok
}

// IsView reports whether a call_method or call_function node of target is
// a view in PyTorch (its entry's Class is ClassView): no kernel runs for
// it, and eager mode folds it into the stage of its producer. Modules are
// never views here (they run their own Forward).
func IsView(kind ir.OpKind, target string) bool {
	if kind != ir.CallMethod && kind != ir.CallFunction {
		return false
	}
	op, ok := Lookup(kind, target)
	return ok && op.Class == ClassView
}

// Names lists the targets of one kind, sorted; with host set, only the
// host kernels.
func Names(kind ir.OpKind, host bool) []string {
	builtins()
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for k, op := range table {
		if k.kind == kind && (!host || op.Host != nil) {
			out = append(out, k.target)
		}
	}
	sort.Strings(out)
	return out
}

// Unknown is the error for a target the table does not have.
func Unknown(kind ir.OpKind, target string) error {
	what := map[ir.OpKind]string{ir.CallFunction: "function", ir.CallMethod: "method", ir.CallModule: "module class"}[kind]
	return fmt.Errorf("no lowering for %s %q (known: %s)", what, target, strings.Join(Names(kind, false), ", "))
}
