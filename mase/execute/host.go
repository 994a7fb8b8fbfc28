package execute

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/core/tensors"
)

// HostFunction runs a call_function node on the host: Go code working on
// materialised tensors rather than GoMLX graph operations. args and kwargs
// are the node's arguments with every node replaced by its value (a
// *tensors.Tensor, a Go constant, or a []any tuple of those); the result
// is a tensor or a tuple of tensors.
//
// A graph holding such a node cannot be one GoMLX computation: compiled
// mode splits it into compiled segments with the host node between them
// (a "graph break", see NewSegmented); eager mode runs it like any other
// node. This is how kernels the Go backend does not have (kernels/sdpa's
// fused attention, kernels/gelu) run inside a MaseGraph.
type HostFunction func(args []any, kwargs map[string]any) (any, error)

var (
	hostMu        sync.RWMutex
	hostFunctions = map[string]HostFunction{}
)

// RegisterHostFunction makes call_function nodes with this target run fn
// on the host. It panics on an empty target, a nil fn, or a target that is
// registered already or lowered by the operator table.
func RegisterHostFunction(target string, fn HostFunction) {
	if target == "" || fn == nil {
		panic("execute.RegisterHostFunction: empty target or nil function")
	}
	if _, ok := functions[target]; ok {
		panic(fmt.Sprintf("execute.RegisterHostFunction: %q is lowered to GoMLX ops already", target))
	}
	hostMu.Lock()
	defer hostMu.Unlock()
	if _, ok := hostFunctions[target]; ok {
		panic(fmt.Sprintf("execute.RegisterHostFunction: %q registered twice", target))
	}
	hostFunctions[target] = fn
}

// HostFunctionFor returns the host function of a call_function target.
func HostFunctionFor(target string) (HostFunction, bool) {
	hostMu.RLock()
	defer hostMu.RUnlock()
	fn, ok := hostFunctions[target]
	return fn, ok
}

// HostFunctionNames lists the registered host functions, sorted.
func HostFunctionNames() []string {
	hostMu.RLock()
	defer hostMu.RUnlock()
	names := make([]string, 0, len(hostFunctions))
	for name := range hostFunctions {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TensorArg returns argument i of a host function as a tensor.
func TensorArg(fn string, args []any, i int) (*tensors.Tensor, error) {
	if i >= len(args) {
		return nil, fmt.Errorf("%s: want at least %d arguments, got %d", fn, i+1, len(args))
	}
	t, ok := args[i].(*tensors.Tensor)
	if !ok {
		return nil, fmt.Errorf("%s: argument %d is %T, want a tensor", fn, i, args[i])
	}
	return t, nil
}

// hostOnlyError is the error of lowering a host node into a GoMLX graph.
func hostOnlyError(target string) error {
	return fmt.Errorf("%q runs on the host (a graph break): run the graph with execute.NewSegmented or execute.NewEager, not as one computation (host functions: %s)",
		target, strings.Join(HostFunctionNames(), ", "))
}
