// Package ir is MaseGraph's intermediate representation: a torch.fx-like
// graph of nodes (placeholder, get_attr, call_module, call_function,
// call_method, output) with MASE metadata on every node.
//
// A Graph keeps its nodes in execution order. Every node's users are kept
// consistent with the other nodes' arguments automatically: creating a node,
// changing its arguments, ReplaceAllUsesWith and EraseNode all update them.
// Lint checks the invariants a pass could break.
package ir

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// OpKind is the kind of a node, with torch.fx's names.
type OpKind string

// The node kinds of torch.fx.
const (
	Placeholder  OpKind = "placeholder"
	GetAttr      OpKind = "get_attr"
	CallModule   OpKind = "call_module"
	CallFunction OpKind = "call_function"
	CallMethod   OpKind = "call_method"
	Output       OpKind = "output"
)

// Valid reports whether k is one of the six fx node kinds.
func (k OpKind) Valid() bool {
	switch k {
	case Placeholder, GetAttr, CallModule, CallFunction, CallMethod, Output:
		return true
	}
	return false
}

// Graph is an ordered list of nodes: the MaseGraph IR.
type Graph struct {
	nodes []*Node
	names map[string]*Node
	// insertAt is where new nodes go: -1 appends; otherwise the index before
	// which the next node is inserted (see InsertingBefore).
	insertAt int
	// Meta holds graph-level metadata (MASE's mg.meta["mase"]).
	Meta GraphMeta
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{names: map[string]*Node{}, insertAt: -1}
}

// Nodes returns the nodes in execution order. The slice is a copy: erasing or
// inserting nodes while ranging over it is safe.
func (g *Graph) Nodes() []*Node { return slices.Clone(g.nodes) }

// Len returns the number of nodes.
func (g *Graph) Len() int { return len(g.nodes) }

// Node returns the node with the given name, or nil.
func (g *Graph) Node(name string) *Node { return g.names[name] }

// MustNode returns the node with the given name or an error naming it.
func (g *Graph) MustNode(name string) (*Node, error) {
	if n := g.names[name]; n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("graph has no node named %q", name)
}

// OutputNode returns the graph's output node, or nil when it has none.
func (g *Graph) OutputNode() *Node {
	for i := len(g.nodes) - 1; i >= 0; i-- {
		if g.nodes[i].Op == Output {
			return g.nodes[i]
		}
	}
	return nil
}

// Placeholders returns the placeholder nodes in order.
func (g *Graph) Placeholders() []*Node {
	var out []*Node
	for _, n := range g.nodes {
		if n.Op == Placeholder {
			out = append(out, n)
		}
	}
	return out
}

// index returns n's position, or -1 when n is not in g.
func (g *Graph) index(n *Node) int {
	if n == nil || n.graph != g {
		return -1
	}
	return slices.Index(g.nodes, n)
}

// uniqueName returns base, or base_1, base_2, ... the first not yet used,
// after turning it into an identifier the way fx does ("a.b" → "a_b").
func (g *Graph) uniqueName(base string) string {
	base = SanitizeName(base)
	if _, taken := g.names[base]; !taken {
		return base
	}
	for i := 1; ; i++ {
		c := fmt.Sprintf("%s_%d", base, i)
		if _, taken := g.names[c]; !taken {
			return c
		}
	}
}

// SanitizeName turns a module path or function name into an fx node name:
// every character that is not a letter, digit or underscore becomes '_'.
func SanitizeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "node"
	}
	return b.String()
}

// AddNode creates a node of kind op with the given target, arguments and
// keyword arguments, and inserts it at the current insertion point (the end
// by default). name is the preferred name; "" derives one from the target as
// fx does (a module path with '.' replaced by '_', a function's name). A name
// already taken gets a numeric suffix. Arguments may be *Node values,
// constants, or slices/maps containing them.
func (g *Graph) AddNode(op OpKind, name, target string, args []any, kwargs map[string]any) (*Node, error) {
	if !op.Valid() {
		return nil, fmt.Errorf("unknown node kind %q (allowed: placeholder, get_attr, call_module, call_function, call_method, output)", op)
	}
	if target == "" {
		return nil, fmt.Errorf("%s node needs a target", op)
	}
	if op == Output && g.OutputNode() != nil {
		return nil, fmt.Errorf("graph already has an output node %q", g.OutputNode().Name)
	}
	for _, in := range collectNodes(args, kwargs) {
		if in.graph != g {
			return nil, fmt.Errorf("argument %q of new %s node belongs to another graph", in.Name, op)
		}
	}
	if name == "" {
		name = target
	}
	n := &Node{Name: g.uniqueName(name), Op: op, Target: target, graph: g}
	n.args, n.kwargs = args, kwargs
	if g.insertAt < 0 || g.insertAt > len(g.nodes) {
		g.nodes = append(g.nodes, n)
	} else {
		g.nodes = slices.Insert(g.nodes, g.insertAt, n)
		g.insertAt++
	}
	g.names[n.Name] = n
	for _, in := range n.Inputs() {
		in.addUser(n)
	}
	return n, nil
}

// MustAddNode is AddNode for graph builders (tracers) whose arguments are
// known to be valid; it panics on error.
func (g *Graph) MustAddNode(op OpKind, name, target string, args []any, kwargs map[string]any) *Node {
	n, err := g.AddNode(op, name, target, args, kwargs)
	if err != nil {
		panic(err)
	}
	return n
}

// InsertingBefore runs fn with the insertion point set just before ref, so
// nodes created by fn are placed, in order, before ref (fx's
// graph.inserting_before). ref == nil means the end of the graph.
func (g *Graph) InsertingBefore(ref *Node, fn func() error) error {
	at := -1
	if ref != nil {
		if at = g.index(ref); at < 0 {
			return fmt.Errorf("cannot insert before %q: it is not in this graph", ref.Name)
		}
	}
	saved := g.insertAt
	g.insertAt = at
	defer func() { g.insertAt = saved }()
	return fn()
}

// InsertingAfter runs fn with the insertion point set just after ref (fx's
// graph.inserting_after).
func (g *Graph) InsertingAfter(ref *Node, fn func() error) error {
	at := g.index(ref)
	if at < 0 {
		name := "<nil>"
		if ref != nil {
			name = ref.Name
		}
		return fmt.Errorf("cannot insert after %q: it is not in this graph", name)
	}
	saved := g.insertAt
	g.insertAt = at + 1
	defer func() { g.insertAt = saved }()
	return fn()
}

// EraseNode removes n from the graph. Like fx it refuses while n still has
// users; the error names every one of them.
func (g *Graph) EraseNode(n *Node) error {
	at := g.index(n)
	if at < 0 {
		if n == nil {
			return fmt.Errorf("cannot erase a nil node")
		}
		return fmt.Errorf("cannot erase node %s: it is not in this graph", n.Name)
	}
	if users := n.Users(); len(users) > 0 {
		names := make([]string, len(users))
		for i, u := range users {
			names[i] = u.Name
		}
		return &EraseError{Node: n.Name, Users: names}
	}
	for _, in := range n.Inputs() {
		in.removeUser(n)
	}
	g.nodes = slices.Delete(g.nodes, at, at+1)
	if g.insertAt > at {
		g.insertAt--
	}
	delete(g.names, n.Name)
	n.graph = nil
	return nil
}

// EraseError is returned by EraseNode when the node still has users.
type EraseError struct {
	Node  string   // the node that could not be erased
	Users []string // its users in graph order
}

// Error gives fx's message shape: which node, how many users, and who.
func (e *EraseError) Error() string {
	return fmt.Sprintf("cannot erase node %s: it still has %d users: %s (rewire them first, e.g. with ReplaceAllUsesWith)",
		e.Node, len(e.Users), strings.Join(e.Users, ", "))
}

// Lint checks the graph's invariants: unique names, every argument defined
// in this graph before its use, users consistent with arguments, known node
// kinds, and exactly one output node, placed last. It returns every problem
// found, joined, or nil.
func (g *Graph) Lint() error {
	var problems []string
	pos := map[*Node]int{}
	seen := map[string]bool{}
	outputs := 0
	for i, n := range g.nodes {
		pos[n] = i
		if seen[n.Name] {
			problems = append(problems, fmt.Sprintf("duplicate node name %q", n.Name))
		}
		seen[n.Name] = true
		if g.names[n.Name] != n {
			problems = append(problems, fmt.Sprintf("node %q is missing from the name index", n.Name))
		}
		if n.graph != g {
			problems = append(problems, fmt.Sprintf("node %q does not point back to this graph", n.Name))
		}
		if !n.Op.Valid() {
			problems = append(problems, fmt.Sprintf("node %q has unknown kind %q", n.Name, n.Op))
		}
		if n.Op == Output {
			outputs++
			if i != len(g.nodes)-1 {
				problems = append(problems, fmt.Sprintf("output node %q is not the last node", n.Name))
			}
		}
	}
	if len(g.names) != len(g.nodes) {
		problems = append(problems, fmt.Sprintf("name index has %d entries for %d nodes", len(g.names), len(g.nodes)))
	}
	if outputs != 1 {
		problems = append(problems, fmt.Sprintf("graph has %d output nodes, want exactly 1", outputs))
	}
	for i, n := range g.nodes {
		for _, in := range n.Inputs() {
			p, ok := pos[in]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("node %q uses %q, which is not in the graph", n.Name, in.Name))
			case p >= i:
				problems = append(problems, fmt.Sprintf("node %q uses %q before it is defined", n.Name, in.Name))
			}
			if !slices.Contains(in.users, n) {
				problems = append(problems, fmt.Sprintf("node %q uses %q but is missing from its users", n.Name, in.Name))
			}
		}
		for _, u := range n.users {
			if !slices.Contains(u.Inputs(), n) {
				problems = append(problems, fmt.Sprintf("node %q lists user %q, which does not use it", n.Name, u.Name))
			}
			if _, ok := pos[u]; !ok {
				problems = append(problems, fmt.Sprintf("node %q lists user %q, which is not in the graph", n.Name, u.Name))
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("graph lint failed: %s", strings.Join(problems, "; "))
}

// String prints the graph one node a line, like fx's graph printout:
// %name : [num_users=N] = op[target=T](args = (...), kwargs = {...}).
func (g *Graph) String() string {
	var b strings.Builder
	b.WriteString("graph():\n")
	for _, n := range g.nodes {
		b.WriteString("    ")
		b.WriteString(n.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// sortByPosition orders nodes by their place in the graph.
func (g *Graph) sortByPosition(nodes []*Node) {
	pos := make(map[*Node]int, len(g.nodes))
	for i, n := range g.nodes {
		pos[n] = i
	}
	sort.SliceStable(nodes, func(a, b int) bool { return pos[nodes[a]] < pos[nodes[b]] })
}
