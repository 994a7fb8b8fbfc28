package execute

import (
	"github.com/gomlx/compute"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/ops"
)

// Eager runs a MaseGraph node by node, the analog of PyTorch's eager mode:
// every node that computes is its own small GoMLX executable (compiled
// the first time the node meets a set of input shapes, then cached), and
// every intermediate tensor is materialised between nodes. Host nodes (see
// ops.HostKernel) run as Go code on those tensors. It gives the same
// outputs as Compiled; Lab 4 times the two against each other.
//
// What PyTorch's eager mode runs no kernel for costs no executable call:
//
//   - View-like nodes fold into the stage of the node they view: its
//     executable also returns the view (or only the view, when nothing
//     else reads the producer). They are the tensor methods view, reshape,
//     permute, transpose, unsqueeze, flatten, contiguous and size, and the
//     functions getitem (a tuple's element, or a tensor indexed by ints
//     and slices: a view in PyTorch), flatten, unsqueeze and transpose:
//     the entries ops' table marks ops.ClassView (see ops.IsView). A view-like node whose inputs are all placeholders
//     or whose latest input comes from a host node stays its own stage, so
//     host kernels always get plain tensors; views of views fold in turn.
//     A reshape that PyTorch would have to copy (after a permute) folds
//     too.
//   - A stage whose executable would return its inputs unchanged (eval-mode
//     dropout, to() or float() to the tensor's own dtype, contiguous(), a
//     tuple's element) hands them on without running, unless the graph
//     returns its value (Run's outputs are always fresh tensors).
//   - Nodes whose value is a Go constant (shape arithmetic: size(),
//     getitem on a size) are worked out once per input shapes and never
//     executed.
//
// Stages share one executable when they compute the same thing on the
// same input signature: the same functions and methods (bert-tiny's
// residual adds, its two attentions) and modules of the same
// configuration (nn.ForwardSignature: class and every configuration
// field) whose parameters and buffers have the same names, shapes and
// dtypes, with the same views folded in. A shared module stage passes its
// module's parameters and buffers as inputs of the executable after its
// tensor inputs (nn.Call.Params): the store's own tensors, neither copied
// nor freed. bert-tiny's two encoder layers, the Q, K and V projections of
// each, and so on, thus compile once: 27 executables for its 46 stages
// instead of 41. A module keeps an executable of its own, its parameters
// bound as the store's variables, when it has a parametrization or a
// forward pre-hook, when its configuration cannot be described (a field
// holding a function, a map, an interface), or, in train mode, when it
// has buffers (BatchNorm2d writes its running statistics back to the
// store); a shared build that fails falls back to that too. Train-mode
// dropout draws from the store's random state whichever executable runs
// it, so sharing changes no value.
//
// Nothing is read back to the host between nodes: tensors pass from one
// executable to the next as they are, only host nodes read theirs. Stats
// counts what a Run executed.
type Eager struct{ *staged }

// NewEager prepares mg for eager execution with its model's parameters
// on the default backend.
func NewEager(mg *ir.MaseGraph, mode Mode) (*Eager, error) {
	be, err := backend.Default()
	if err != nil {
		return nil, err
	}
	return NewEagerOn(be, mg, mode)
}

// NewEagerOn is NewEager on a given backend.
func NewEagerOn(be compute.Backend, mg *ir.MaseGraph, mode Mode) (*Eager, error) {
	s, err := newStaged(be, mg, mode, foldViews)
	if err != nil {
		return nil, err
	}
	s.shareModules = true
	return &Eager{s}, nil
}

// foldViews makes one stage per node, except that a view-like node joins
// the stage of its latest input (the stage that produces the last of the
// values it reads, so that all of them exist when that stage runs) when
// that is a compiled stage.
func foldViews(nodes []*ir.Node) [][]*ir.Node {
	var groups [][]*ir.Node
	groupOf := map[*ir.Node]int{}
	var host []bool
	for _, n := range nodes {
		if ops.IsView(n.Op, n.Target) {
			g := -1
			for _, x := range n.Inputs() {
				if i, ok := groupOf[x]; ok && i > g {
					g = i
				}
			}
			if g >= 0 && !host[g] {
				groups[g] = append(groups[g], n)
				groupOf[n] = g
				continue
			}
		}
		groupOf[n] = len(groups)
		groups = append(groups, []*ir.Node{n})
		host = append(host, isHostNode(n))
	}
	return groups
}
