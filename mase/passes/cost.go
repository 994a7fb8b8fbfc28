package passes

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/ops"
)

// CostKey is the key of a node's cost in its software metadata
// (n.Meta.Software["cost"]).
const CostKey = "cost"

// CostArgs are AddCostMetadata's arguments.
type CostArgs struct {
	// Training costs the graph as it runs in train mode (dropout
	// computes); by default it is costed in eval mode, where dropout is a
	// no-op.
	Training bool `json:"training"`
}

// ModuleCost is the cost of a group of nodes: a module with its
// submodules, or the whole graph.
type ModuleCost struct {
	ops.Cost
	// Bytes is BytesRead + BytesWritten.
	Bytes int64 `json:"bytes"`
	// Nodes counts the nodes, Views and NoOps those that cost nothing
	// because they are views or no-ops.
	Nodes int `json:"nodes"`
	Views int `json:"views"`
	NoOps int `json:"no_ops"`
}

func (m *ModuleCost) add(r NodeCostRecord) {
	m.Cost = m.Cost.Add(r.Cost)
	m.Bytes = m.BytesRead + m.BytesWritten
	m.Nodes++
	switch r.Class {
	case ops.ClassView.String():
		m.Views++
	case ops.ClassNoOp.String():
		m.NoOps++
	}
}

// NodeCostRecord is one node's cost in a CostSummary.
type NodeCostRecord struct {
	Name string `json:"name"`
	// Kind is the node kind (call_module, ...), Op its mase_op (linear,
	// scaled_dot_product_attention, ...), Target its target.
	Kind   string `json:"kind"`
	Op     string `json:"op"`
	Target string `json:"target"`
	// Module is the module path the node is counted under ("" for the
	// top level; see AddCostMetadata).
	Module string `json:"module"`
	// Class is compute, view or no_op.
	Class string `json:"class"`
	ops.Cost
	Bytes int64 `json:"bytes"`
}

// CostSummary is a graph's cost: the total, each module's (with its
// submodules, as FlopCounterMode's per-module table), and each node's.
type CostSummary struct {
	// Training is the mode costed.
	Training bool `json:"training"`
	// Total is the whole graph.
	Total ModuleCost `json:"total"`
	// PerModule maps a dotted module path ("bert.encoder.layer.0") to the
	// cost of the nodes counted under it or under its submodules.
	PerModule map[string]ModuleCost `json:"per_module"`
	// Nodes lists every node in graph order.
	Nodes []NodeCostRecord `json:"nodes"`
}

// JSON is the summary as indented JSON (keys flops, elementwise_flops,
// bytes_read, bytes_written, bytes, ...).
func (s *CostSummary) JSON() ([]byte, error) { return json.MarshalIndent(s, "", "  ") }

// Module returns the cost of a module path ("" is the whole graph).
func (s *CostSummary) Module(path string) (ModuleCost, bool) {
	if path == "" {
		return s.Total, true
	}
	m, ok := s.PerModule[path]
	return m, ok
}

// AddCostMetadata annotates every node with its cost (ops.NodeCostOf:
// the op table's cost functions on the node's common metadata, which
// AddCommonMetadata must have recorded) under n.Meta.Software["cost"]: a
// map with flops (counted as PyTorch's FlopCounterMode counts them:
// matmuls, convolutions and attention, a multiply-add being 2),
// elementwise_flops (everything else, apart), bytes_read, bytes_written,
// bytes, class (compute, view or no_op), view and no_op (booleans) and
// module (the module path it is counted under). It returns the summary
// (CostSummary) under Info["summary"], with its totals under flops,
// elementwise_flops and bytes.
//
// A call_module node is counted under its module's path. Function and
// method nodes have no module of their own in a traced graph: one is
// counted under the innermost module that holds both the module that
// last produced one of its inputs and the module that first consumes its
// value (following other function and method nodes), so bert's attention
// lands in bert.encoder.layer.N.attention and a residual add in the block
// it closes; a node with no module on one side (the attention mask built
// from the inputs) is counted at the top level only.
func AddCostMetadata(mg *ir.MaseGraph, args CostArgs) (*ir.MaseGraph, Info, error) {
	scopes := nodeScopes(mg.Graph)
	for _, n := range mg.Graph.Nodes() {
		if n.Meta == nil {
			return nil, nil, fmt.Errorf("add_cost_metadata: node %s has no metadata: run InitMetadata and AddCommonMetadata first", n.Name)
		}
		c, err := ops.NodeCostOf(mg, n, args.Training)
		if err != nil {
			return nil, nil, fmt.Errorf("add_cost_metadata: %w", err)
		}
		if n.Meta.Software == nil {
			n.Meta.Software = map[string]any{}
		}
		n.Meta.Software[CostKey] = map[string]any{
			"flops": c.FLOPs, "elementwise_flops": c.ElementwiseFLOPs,
			"bytes_read": c.BytesRead, "bytes_written": c.BytesWritten, "bytes": c.Bytes(),
			"class": c.Class.String(), "view": c.Class == ops.ClassView, "no_op": c.Class == ops.ClassNoOp,
			"module": scopes[n], "training": args.Training,
		}
	}
	s, err := CostSummaryOf(mg)
	if err != nil {
		return nil, nil, err
	}
	return mg, Info{"summary": s, "flops": s.Total.FLOPs, "elementwise_flops": s.Total.ElementwiseFLOPs, "bytes": s.Total.Bytes}, nil
}

// CostSummaryOf sums the costs AddCostMetadata wrote into the nodes'
// software metadata (they survive a MaseGraph checkpoint) per module and
// for the graph.
func CostSummaryOf(mg *ir.MaseGraph) (*CostSummary, error) {
	s := &CostSummary{PerModule: map[string]ModuleCost{}}
	for i, n := range mg.Graph.Nodes() {
		var m map[string]any
		if n.Meta != nil {
			m, _ = n.Meta.Software[CostKey].(map[string]any)
		}
		if m == nil {
			return nil, fmt.Errorf("cost summary: node %s has no cost metadata: run AddCostMetadata first", n.Name)
		}
		r := NodeCostRecord{Name: n.Name, Kind: string(n.Op), Op: n.Meta.Common.MaseOp, Target: n.Target}
		var err error
		for _, f := range []struct {
			key string
			dst *int64
		}{{"flops", &r.FLOPs}, {"elementwise_flops", &r.ElementwiseFLOPs}, {"bytes_read", &r.BytesRead}, {"bytes_written", &r.BytesWritten}} {
			if *f.dst, err = costInt(m, f.key); err != nil {
				return nil, fmt.Errorf("cost summary: node %s: %w", n.Name, err)
			}
		}
		r.Bytes = r.Cost.Bytes()
		r.Class, _ = m["class"].(string)
		r.Module, _ = m["module"].(string)
		if t, ok := m["training"].(bool); ok && i == 0 {
			s.Training = t
		}
		s.Nodes = append(s.Nodes, r)
		s.Total.add(r)
		for p := r.Module; p != ""; p = parentPath(p) {
			mc := s.PerModule[p]
			mc.add(r)
			s.PerModule[p] = mc
		}
	}
	return s, nil
}

// costInt reads an integer of the cost map (int64 as written; int or
// float64 after other round trips).
func costInt(m map[string]any, key string) (int64, error) {
	switch v := m[key].(type) {
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case float64:
		return int64(v), nil
	}
	return 0, fmt.Errorf("cost %s is %T (%v), want an integer", key, m[key], m[key])
}

// parentPath drops the last component of a dotted path ("" at the top).
func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// commonPath is the longest common dotted prefix of two paths.
func commonPath(a, b string) string {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	var out []string
	for i := 0; i < len(as) && i < len(bs) && as[i] == bs[i]; i++ {
		out = append(out, as[i])
	}
	return strings.Join(out, ".")
}

// nodeScopes gives each node the module path it is counted under (see
// AddCostMetadata).
func nodeScopes(g *ir.Graph) map[*ir.Node]string {
	nodes := g.Nodes()
	pos := make(map[*ir.Node]int, len(nodes))
	for i, n := range nodes {
		pos[n] = i
	}
	// producer: the module path of the latest module among a node's
	// inputs, through function and method nodes.
	producer := map[*ir.Node]string{}
	for _, n := range nodes {
		if n.Op == ir.CallModule {
			producer[n] = n.Target
			continue
		}
		best := -1
		for _, x := range n.Inputs() {
			if _, ok := producer[x]; ok && pos[x] > best {
				best = pos[x]
			}
		}
		if best >= 0 {
			producer[n] = producer[nodes[best]]
		}
	}
	// consumer: the module path of the first module among a node's users,
	// through function and method nodes.
	consumer := map[*ir.Node]string{}
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		if n.Op == ir.CallModule {
			consumer[n] = n.Target
			continue
		}
		best := len(nodes)
		for _, u := range n.Users() {
			if _, ok := consumer[u]; ok && pos[u] < best {
				best = pos[u]
			}
		}
		if best < len(nodes) {
			consumer[n] = consumer[nodes[best]]
		}
	}
	out := make(map[*ir.Node]string, len(nodes))
	for _, n := range nodes {
		switch n.Op {
		case ir.CallModule:
			out[n] = n.Target
		case ir.CallFunction, ir.CallMethod:
			p, okP := producer[n]
			c, okC := consumer[n]
			if okP && okC {
				out[n] = commonPath(parentPath(p), parentPath(c))
			}
		default:
			out[n] = ""
		}
	}
	return out
}

// ParseCostArgs reads add_cost_metadata's MASE-style pass_args:
// {"training": bool}.
func ParseCostArgs(m map[string]any) (CostArgs, error) {
	var a CostArgs
	for k, v := range m {
		switch k {
		case "training":
			b, ok := v.(bool)
			if !ok {
				return a, fmt.Errorf("add_cost_metadata: training is %v (%T), want true or false", v, v)
			}
			a.Training = b
		default:
			return a, fmt.Errorf("add_cost_metadata: unknown argument %q (allowed: training)", k)
		}
	}
	return a, nil
}
