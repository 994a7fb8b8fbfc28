package ops

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/limits"
)

// Argument checking: the positional and keyword arguments each built-in
// function and method takes, and the types its lowering needs, so that a
// graph read from a file (checkpoint.Import) is refused when a node's
// arguments could not run, before anything is compiled. The signatures
// follow the lowerings in lower.go and host.go (not torch's full
// signatures): a keyword the lowering would ignore is refused rather than
// silently dropped.

// A Kind is what a node's value is, as far as argument checking can tell
// without running the graph.
type Kind uint8

// The kinds of node values.
const (
	// KindAny is a value checking cannot tell (an element of a constant
	// tuple, the result of a user-registered operator).
	KindAny Kind = iota
	// KindTensor is a tensor: placeholders, parameters, modules' outputs
	// and most operators' results.
	KindTensor
	// KindInt is a Python int, such as x.size(1).
	KindInt
	// KindFloat is a Python float, such as arithmetic on numbers.
	KindFloat
	// KindInts is a tuple of ints, such as x.size().
	KindInts
)

// accept is a set of argument types.
type accept uint16

const (
	aTensor accept = 1 << iota
	aInt
	aFloat
	aBool
	aString
	aNone
	aSlice
	aInts  // a tuple of ints
	aIndex // a tuple of ints and slices (a tensor index)
	aTuple // any other tuple
	aDict

	aNumber = aInt | aFloat
	anyType = 1<<iota - 1
)

// describe names the types of a set, for errors.
func (a accept) describe() string {
	var parts []string
	for _, t := range []struct {
		bit  accept
		name string
	}{{aTensor, "a tensor"}, {aInt, "an int"}, {aFloat, "a float"}, {aBool, "a bool"}, {aString, "a string"}, {aNone, "None"},
		{aSlice, "a slice"}, {aInts, "a tuple of ints"}, {aIndex, "a tuple of ints and slices"}} {
		if a&t.bit != 0 {
			parts = append(parts, t.name)
		}
	}
	return strings.Join(parts, " or ")
}

// classify returns the types a value satisfies: node references by the
// kind of the node, constants by their Go type.
func classify(v any, kindOf func(*ir.Node) Kind) accept {
	switch x := v.(type) {
	case *ir.Node:
		switch kindOf(x) {
		case KindTensor:
			return aTensor
		case KindInt:
			return aInt
		case KindFloat:
			return aFloat
		case KindInts:
			return aInts | aIndex | aTuple
		}
		return anyType
	case nil:
		return aNone
	case bool:
		return aBool
	case int, int32, int64:
		return aInt
	case float32, float64:
		return aFloat
	case string:
		return aString
	case ir.Slice:
		return aSlice
	case map[string]any:
		return aDict
	case []any:
		out := aInts | aIndex | aTuple
		for _, e := range x {
			c := classify(e, kindOf)
			if c&aInt == 0 {
				out &^= aInts
			}
			if c&(aInt|aSlice) == 0 {
				out &^= aIndex
			}
		}
		return out
	}
	return 0
}

// valueString shows a value in an error: a node by name with the kind of
// its value, a constant as the graph prints it with its type.
func valueString(v any, kindOf func(*ir.Node) Kind) string {
	s := ir.FormatValue(v)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return fmt.Sprintf("%s (%s)", s, typeName(v, kindOf))
}

// typeName is a value's type in Python's words.
func typeName(v any, kindOf func(*ir.Node) Kind) string {
	switch x := v.(type) {
	case *ir.Node:
		switch kindOf(x) {
		case KindTensor:
			return "a tensor"
		case KindInt:
			return "an int"
		case KindFloat:
			return "a float"
		case KindInts:
			return "a tuple of ints"
		}
		return "a value"
	case nil:
		return "None"
	case bool:
		return "a bool"
	case int, int32, int64:
		return "an int"
	case float32, float64:
		return "a float"
	case string:
		return "a string"
	case ir.Slice:
		return "a slice"
	case []any:
		return "a tuple"
	case map[string]any:
		return "a dict"
	}
	return fmt.Sprintf("a Go %T", v)
}

// param is one argument of a signature.
type param struct {
	name   string
	accept accept
}

// signature is what a function or method takes.
type signature struct {
	// args are the positional arguments in order (a method's self first);
	// the first required must be given.
	args     []param
	required int
	// shape, when set, names the trailing positional arguments that form
	// a shape: one tuple of ints, or any number of ints (view, ones).
	shape string
	// kwargs are the keywords the lowering reads. A keyword naming a
	// positional argument is that argument given by keyword.
	kwargs map[string]accept
	// probability lists the arguments (by name) that are dropout
	// probabilities: a constant must be in [0, 1).
	probability []string
	// result gives the kind of the node's value from the types of its
	// positional arguments; nil means a tensor.
	result func(target string, args []accept) Kind
}

var (
	tensorArg = param{"input", aTensor}
	selfArg   = param{"self", aTensor}
)

// unarySig takes one tensor and the keywords given.
func unarySig(first param, kwargs map[string]accept) signature {
	return signature{args: []param{first}, required: 1, kwargs: kwargs}
}

// builtinSignatures lists the signatures of the built-in functions and
// methods, keyed like the table.
func builtinSignatures() map[key]signature {
	number := aTensor | aNumber
	arith := signature{args: []param{{"input", number}, {"other", number}}, required: 2, result: arithKind}
	add := arith
	add.args = []param{{"input", number | aInts}, {"other", number | aInts}}
	dtype := map[string]accept{"dtype": aString | aNone}
	leaky := func(first param) signature {
		return signature{args: []param{first, {"negative_slope", aNumber}}, required: 1,
			kwargs: map[string]accept{"negative_slope": aNumber, "inplace": aBool}}
	}
	softmaxSig := func(first param) signature {
		return signature{args: []param{first, {"dim", aInt}}, required: 1, kwargs: map[string]accept{"dim": aInt}}
	}
	flattenSig := func(first param) signature {
		return signature{args: []param{first, {"start_dim", aInt}, {"end_dim", aInt}}, required: 1,
			kwargs: map[string]accept{"start_dim": aInt, "end_dim": aInt}}
	}
	unsqueezeSig := func(first param) signature {
		return signature{args: []param{first, {"dim", aInt}}, required: 2}
	}
	transposeSig := func(first param) signature {
		return signature{args: []param{first, {"dim0", aInt}, {"dim1", aInt}}, required: 3}
	}
	fn := func(target string) key { return key{ir.CallFunction, target} }
	method := func(target string) key { return key{ir.CallMethod, target} }
	sigs := map[key]signature{
		fn("add"): add, fn("sub"): arith, fn("mul"): arith, fn("truediv"): arith, fn("div"): arith,
		fn("matmul"):  {args: []param{tensorArg, {"other", aTensor}}, required: 2},
		fn("getitem"): {args: []param{{"object", aTensor | aInts | aTuple}, {"index", aInt | aSlice | aIndex}}, required: 2, result: getitemKind},
		fn("ones"):    {shape: "size", kwargs: dtype},
		fn("zeros"):   {shape: "size", kwargs: dtype},
		fn("arange"):  {args: []param{{"end", aInt}}, required: 1, kwargs: dtype},
		fn("scaled_dot_product_attention"): {args: []param{{"query", aTensor}, {"key", aTensor}, {"value", aTensor}}, required: 3,
			kwargs:      map[string]accept{"attn_mask": aTensor | aNone, "dropout_p": aNumber, "is_causal": aBool, "scale": aNumber | aNone},
			probability: []string{"dropout_p"}},
		fn("softmax"):    softmaxSig(tensorArg),
		fn("relu"):       unarySig(tensorArg, map[string]accept{"inplace": aBool}),
		fn("leaky_relu"): leaky(tensorArg),
		fn("flatten"):    flattenSig(tensorArg),
		fn("unsqueeze"):  unsqueezeSig(tensorArg),
		fn("transpose"):  transposeSig(tensorArg),
		fn("dropout"): {args: []param{tensorArg}, required: 1,
			kwargs: map[string]accept{"p": aNumber, "training": aBool, "inplace": aBool}, probability: []string{"p"}},
		fn("linear"): {args: []param{tensorArg, {"weight", aTensor}, {"bias", aTensor | aNone}}, required: 2,
			kwargs: map[string]accept{"bias": aTensor | aNone}},
		fn(HostSDPA): {args: []param{{"query", aTensor}, {"key", aTensor}, {"value", aTensor}}, required: 3,
			kwargs: map[string]accept{"attn_mask": aTensor | aNone, "scale": aNumber | aNone, "seq_major": aBool}},
		fn(HostGELU): unarySig(tensorArg, nil),
		fn(HostMXInt8): {args: []param{{"mantissa_words", aTensor}, {"exponent_words", aTensor}, {"numel", aInt}, {"group_size", aInt}}, required: 4,
			kwargs: map[string]accept{"shape": aInts}},

		method("size"):       {args: []param{selfArg, {"dim", aInt}}, required: 1, result: sizeKind},
		method("view"):       {args: []param{selfArg}, required: 1, shape: "size"},
		method("reshape"):    {args: []param{selfArg}, required: 1, shape: "shape"},
		method("permute"):    {args: []param{selfArg}, required: 1, shape: "dims"},
		method("contiguous"): unarySig(selfArg, nil),
		method("unsqueeze"):  unsqueezeSig(selfArg),
		method("transpose"):  transposeSig(selfArg),
		method("leaky_relu"): leaky(selfArg),
		method("softmax"):    softmaxSig(selfArg),
		method("flatten"):    flattenSig(selfArg),
		method("float"):      unarySig(selfArg, nil),
		method("to"): {args: []param{selfArg, {"dtype", aString | aNone}}, required: 1,
			kwargs: map[string]accept{"dtype": aString | aNone}},
	}
	sigs[fn("gelu")] = unarySig(tensorArg, map[string]accept{"approximate": aString})
	for _, name := range []string{"tanh", "sigmoid", "erf", "exp", "sqrt", "neg"} {
		sigs[fn(name)] = unarySig(tensorArg, nil)
	}
	for _, name := range []string{"relu", "tanh"} {
		sigs[method(name)] = unarySig(selfArg, nil)
	}
	return sigs
}

var signatures = sync.OnceValue(builtinSignatures)

// arithKind is the value of add, sub, mul, truediv and div: a tensor when
// either side is one, an int for ints (not for division), the
// concatenation for two tuples (add), else a float.
func arithKind(target string, args []accept) Kind {
	a, b := args[0], args[1]
	switch {
	case a == anyType || b == anyType:
		return KindAny
	case a&aTensor != 0 || b&aTensor != 0:
		return KindTensor
	case a&aInts != 0 && b&aInts != 0:
		return KindInts
	case a&aInt != 0 && b&aInt != 0 && target != "truediv" && target != "div":
		return KindInt
	}
	return KindFloat
}

// getitemKind is the value of getitem: a tensor's slice is a tensor; an
// int picks an int from a tuple of ints, a slice a shorter tuple.
func getitemKind(_ string, args []accept) Kind {
	obj, idx := args[0], args[1]
	switch {
	case obj == aTensor:
		return KindTensor
	case obj&aInts != 0 && obj != anyType && idx == aInt:
		return KindInt
	case obj&aInts != 0 && obj != anyType && idx == aSlice:
		return KindInts
	}
	return KindAny
}

// sizeKind is x.size(): a tuple of ints, or one int for x.size(dim).
func sizeKind(_ string, args []accept) Kind {
	if len(args) > 1 {
		return KindInt
	}
	return KindInts
}

// HasSignature reports whether the arguments of a function or method
// target are checked by CheckCall (every built-in one is; one added with
// Register is not).
func HasSignature(kind ir.OpKind, target string) bool {
	_, ok := signatures()[key{kind, target}]
	return ok
}

// CheckCall checks a call_function, call_method or call_module node: the
// target is in the table (for modules the caller checks the model), and
// the arguments are those the target takes, of the types its lowering
// needs (tensors where tensors, ints where ints, dropout probabilities in
// [0, 1)); kindOf gives the kind of each earlier node. It returns the kind
// of the node's own value. A module takes tensors only, positionally; an
// operator added with Register has no signature: its arguments are not
// checked and its value is KindAny.
func CheckCall(n *ir.Node, kindOf func(*ir.Node) Kind) (Kind, error) {
	args, kwargs := n.Args(), n.Kwargs()
	switch n.Op {
	case ir.CallModule:
		if len(args) == 0 {
			return 0, fmt.Errorf("call_module %s has no arguments (allowed: one or more tensors)", n.Target)
		}
		for i, a := range args {
			if classify(a, kindOf)&aTensor == 0 {
				return 0, fmt.Errorf("call_module %s: argument %d is %s (allowed: a tensor)", n.Target, i, valueString(a, kindOf))
			}
		}
		return KindTensor, nil
	case ir.CallFunction, ir.CallMethod:
	default:
		return 0, fmt.Errorf("%s node is not a call (allowed: call_function, call_method, call_module)", n.Op)
	}
	if _, ok := Lookup(n.Op, n.Target); !ok {
		return 0, Unknown(n.Op, n.Target)
	}
	sig, ok := signatures()[key{n.Op, n.Target}]
	if !ok {
		return KindAny, nil
	}
	return sig.check(n.Op, n.Target, args, kwargs, kindOf)
}

func (s signature) check(op ir.OpKind, target string, args []any, kwargs map[string]any, kindOf func(*ir.Node) Kind) (Kind, error) {
	what := fmt.Sprintf("%s %s", op, target)
	if len(args) < s.required {
		return 0, fmt.Errorf("%s: %d positional arguments, want at least %d (%s)", what, len(args), s.required, s.names())
	}
	if len(args) > len(s.args) && s.shape == "" {
		return 0, fmt.Errorf("%s: %d positional arguments, want at most %d (%s)", what, len(args), len(s.args), s.names())
	}
	classes := make([]accept, len(args))
	values := map[string]any{}
	for i, a := range args {
		classes[i] = classify(a, kindOf)
		if i >= len(s.args) {
			continue
		}
		p := s.args[i]
		if classes[i]&p.accept == 0 {
			return 0, fmt.Errorf("%s: argument %d (%s) is %s (allowed: %s)", what, i, p.name, valueString(a, kindOf), p.accept.describe())
		}
		values[p.name] = a
	}
	if s.shape != "" && len(args) > len(s.args) {
		rest := classes[len(s.args):]
		single := len(rest) == 1 && rest[0]&aInts != 0
		if !single {
			for j, c := range rest {
				if c&aInt == 0 {
					i := len(s.args) + j
					return 0, fmt.Errorf("%s: argument %d (%s) is %s (allowed: ints, or one tuple of ints)", what, i, s.shape, valueString(args[i], kindOf))
				}
			}
		}
	}
	for _, k := range sortedNames(kwargs) {
		want, ok := s.kwargs[k]
		if !ok {
			return 0, fmt.Errorf("%s: unknown keyword %q (allowed: %s)", what, k, s.kwargNames())
		}
		if _, dup := values[k]; dup {
			return 0, fmt.Errorf("%s: %s is given both positionally and by keyword", what, k)
		}
		if c := classify(kwargs[k], kindOf); c&want == 0 {
			return 0, fmt.Errorf("%s: keyword %s is %s (allowed: %s)", what, k, valueString(kwargs[k], kindOf), want.describe())
		}
		values[k] = kwargs[k]
	}
	for _, name := range s.probability {
		var p float64
		switch x := values[name].(type) {
		case int:
			p = float64(x)
		case int32:
			p = float64(x)
		case int64:
			p = float64(x)
		case float32:
			p = float64(x)
		case float64:
			p = x
		default:
			continue // absent, or a node: known only when it runs
		}
		if err := limits.Probability(name, p); err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
	}
	if s.result == nil {
		return KindTensor, nil
	}
	return s.result(target, classes), nil
}

// names lists a signature's positional arguments.
func (s signature) names() string {
	var out []string
	for _, p := range s.args {
		out = append(out, p.name)
	}
	if s.shape != "" {
		out = append(out, "*"+s.shape)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// kwargNames lists a signature's keywords.
func (s signature) kwargNames() string {
	if len(s.kwargs) == 0 {
		return "none"
	}
	return strings.Join(sortedNames(s.kwargs), ", ")
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
