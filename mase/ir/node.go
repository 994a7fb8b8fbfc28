package ir

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Node is one operation of a Graph.
type Node struct {
	// Name is unique in the graph, fx-style: a module path with '.' turned
	// into '_' (bert_embeddings_dropout), or a function name with a counter
	// (add, add_1, ...).
	Name string
	// Op is the node kind.
	Op OpKind
	// Target is the dotted module path (call_module), the function name
	// (call_function), the method name (call_method), the attribute path
	// (get_attr), the input name (placeholder) or "output".
	Target string
	// Meta is MASE's node.meta["mase"]; nil until InitMetadata runs.
	Meta *Meta

	args   []any
	kwargs map[string]any
	users  []*Node
	graph  *Graph
}

// Slice is a Python slice constant (start:stop:step) used in getitem
// arguments; nil fields are omitted bounds.
type Slice struct {
	Start, Stop, Step *int
}

// String prints the slice as Python would write it in an index.
func (s Slice) String() string {
	f := func(p *int) string {
		if p == nil {
			return ""
		}
		return fmt.Sprint(*p)
	}
	out := f(s.Start) + ":" + f(s.Stop)
	if s.Step != nil {
		out += ":" + f(s.Step)
	}
	return out
}

// Graph returns the graph the node belongs to (nil once erased).
func (n *Node) Graph() *Graph { return n.graph }

// Args returns the positional arguments (a copy of the slice).
func (n *Node) Args() []any { return slices.Clone(n.args) }

// Arg returns positional argument i, or nil when there are fewer.
func (n *Node) Arg(i int) any {
	if i < 0 || i >= len(n.args) {
		return nil
	}
	return n.args[i]
}

// Kwargs returns the keyword arguments (a copy of the map).
func (n *Node) Kwargs() map[string]any {
	out := make(map[string]any, len(n.kwargs))
	for k, v := range n.kwargs {
		out[k] = v
	}
	return out
}

// Kwarg returns one keyword argument and whether it is set.
func (n *Node) Kwarg(key string) (any, bool) {
	v, ok := n.kwargs[key]
	return v, ok
}

// SetArgs replaces the positional arguments, keeping users consistent.
func (n *Node) SetArgs(args ...any) error { return n.setInputs(args, n.kwargs) }

// SetKwargs replaces the keyword arguments, keeping users consistent.
func (n *Node) SetKwargs(kwargs map[string]any) error { return n.setInputs(n.args, kwargs) }

func (n *Node) setInputs(args []any, kwargs map[string]any) error {
	if n.graph == nil {
		return fmt.Errorf("node %s has been erased", n.Name)
	}
	for _, in := range collectNodes(args, kwargs) {
		if in.graph != n.graph {
			return fmt.Errorf("argument %q of node %q is not in the same graph", in.Name, n.Name)
		}
	}
	for _, in := range n.Inputs() {
		in.removeUser(n)
	}
	n.args, n.kwargs = args, kwargs
	for _, in := range n.Inputs() {
		in.addUser(n)
	}
	return nil
}

// Inputs returns the distinct nodes among the arguments, in argument order
// (positional first, then keyword arguments by sorted key).
func (n *Node) Inputs() []*Node { return collectNodes(n.args, n.kwargs) }

// Users returns the nodes that take n as an argument, in graph order.
func (n *Node) Users() []*Node {
	out := slices.Clone(n.users)
	if n.graph != nil {
		n.graph.sortByPosition(out)
	}
	return out
}

// NumUsers returns how many nodes use n.
func (n *Node) NumUsers() int { return len(n.users) }

func (n *Node) addUser(u *Node) {
	if !slices.Contains(n.users, u) {
		n.users = append(n.users, u)
	}
}

func (n *Node) removeUser(u *Node) {
	if i := slices.Index(n.users, u); i >= 0 {
		n.users = slices.Delete(n.users, i, i+1)
	}
}

// ReplaceAllUsesWith rewires every user of n to use replacement instead and
// returns the users that changed (fx's replace_all_uses_with).
func (n *Node) ReplaceAllUsesWith(replacement *Node) ([]*Node, error) {
	if replacement == nil {
		return nil, fmt.Errorf("cannot replace uses of %s with nil", n.Name)
	}
	if replacement.graph != n.graph || n.graph == nil {
		return nil, fmt.Errorf("cannot replace uses of %s with %s: not in the same graph", n.Name, replacement.Name)
	}
	users := n.Users()
	for _, u := range users {
		if err := u.ReplaceInputWith(n, replacement); err != nil {
			return nil, err
		}
	}
	return users, nil
}

// ReplaceInputWith replaces every occurrence of old among n's arguments by
// replacement.
func (n *Node) ReplaceInputWith(old, replacement *Node) error {
	swap := func(v *Node) any {
		if v == old {
			return replacement
		}
		return v
	}
	args := make([]any, len(n.args))
	for i, a := range n.args {
		args[i] = MapNodes(a, swap)
	}
	var kwargs map[string]any
	if n.kwargs != nil {
		kwargs = make(map[string]any, len(n.kwargs))
		for k, v := range n.kwargs {
			kwargs[k] = MapNodes(v, swap)
		}
	}
	return n.setInputs(args, kwargs)
}

// MapNodes returns a copy of the argument value v in which every *Node
// (also inside []any tuples and map[string]any) is replaced by f(node).
// Executors use it to substitute values for nodes.
func MapNodes(v any, f func(*Node) any) any {
	switch x := v.(type) {
	case *Node:
		return f(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = MapNodes(e, f)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = MapNodes(e, f)
		}
		return out
	}
	return v
}

// collectNodes returns the distinct nodes inside args and kwargs in order.
func collectNodes(args []any, kwargs map[string]any) []*Node {
	var out []*Node
	visit := func(n *Node) any {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
		return n
	}
	for _, a := range args {
		MapNodes(a, visit)
	}
	keys := make([]string, 0, len(kwargs))
	for k := range kwargs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		MapNodes(kwargs[k], visit)
	}
	return out
}

// String prints the node as fx prints it in a graph listing.
func (n *Node) String() string {
	if n.Op == Placeholder {
		return fmt.Sprintf("%%%s : [num_users=%d] = placeholder[target=%s]", n.Name, len(n.users), n.Target)
	}
	return fmt.Sprintf("%%%s : [num_users=%d] = %s[target=%s](args = %s, kwargs = %s)",
		n.Name, len(n.users), n.Op, n.Target, FormatArgs(n.args), FormatKwargs(n.kwargs))
}

// FormatArgs prints positional arguments as a Python tuple, nodes as %name.
func FormatArgs(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = FormatValue(a)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// FormatKwargs prints keyword arguments as a Python dict with sorted keys.
func FormatKwargs(kwargs map[string]any) string {
	keys := make([]string, 0, len(kwargs))
	for k := range kwargs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + FormatValue(kwargs[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// FormatValue prints one argument value: %name for nodes, Python-like
// literals for constants.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case *Node:
		return "%" + x.Name
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return fmt.Sprintf("%q", x)
	case Slice:
		return "slice(" + x.String() + ")"
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		return s
	case []any:
		return FormatArgs(x)
	case map[string]any:
		return FormatKwargs(x)
	}
	return fmt.Sprint(v)
}
