// Package nn holds gomase's modules: leaf layers with HuggingFace/PyTorch
// parameter names (Linear, Embedding, LayerNorm, Dropout, activations,
// CrossEntropyLoss, ...) and Model, the module tree of a network with its
// parameters in a GoMLX model.Store.
//
// A module is either a container (its forward is traced into a MaseGraph by
// the model's code) or a leaf (Leaf: it knows how to build its own GoMLX
// computation, and appears in a MaseGraph as one call_module node).
//
// The modules that passes put into a model live beside it, each
// registering its kind here so that checkpoints restore it: quantised
// layers in mase/nn/quantized, MXINT8-packed ones in mase/nn/packed, the
// pruning mask and pre-hook in mase/nn/prune. nn imports no backend and no
// number format.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Module is a node of a model's module tree, like torch.nn.Module.
type Module interface {
	// TypeName is the class name printed in the module tree ("Linear").
	TypeName() string
	// ExtraRepr is the text inside the parentheses of a leaf's printout
	// ("in_features=128, out_features=2, bias=True").
	ExtraRepr() string
	// Children are the direct submodules, in registration order.
	Children() []Named
	// Params are the module's own parameters (not its children's).
	Params() []ParamSpec
}

// Named is a child module under its attribute name.
type Named struct {
	Name   string
	Module Module
}

// ParamSpec declares one parameter: its name, shape and initialiser.
type ParamSpec struct {
	Name  string
	Shape []int
	Init  Init
	// Frozen marks a parameter the module never trains (LoRA's base
	// weight); trainers leave it out whatever they freeze or unfreeze.
	Frozen bool
}

// Init fills a parameter's values at model creation, given the shape and a
// seeded random source.
type Init func(shape []int, rng *rand.Rand) []float32

// Leaf is a module that appears as a single call_module node and builds its
// own GoMLX computation.
type Leaf interface {
	Module
	// Forward builds the module's output from its arguments. Arguments and
	// the result are graph nodes or constants.
	Forward(c *Call, args []any, kwargs map[string]any) (any, error)
}

// Call is what a leaf's Forward gets besides its arguments: the graph
// being built, the module's parameters and the execution mode.
type Call struct {
	Graph    *graph.Graph
	Scope    *model.Scope // the model's store, scoped at the module's path
	Path     string       // the module's dotted path
	Training bool         // train mode: dropout active
	// Random returns uniform values in [0,1) of the given shape for
	// stochastic layers; nil in eval mode.
	Random func(shape ...int) *graph.Node
	// Model is the model the module belongs to. When set, Param applies
	// the parametrizations registered on the parameter and Forward runs
	// the module's forward pre-hooks (see parametrize.go); when nil, both
	// are skipped.
	Model *Model
	// Params, when non-nil, holds the module's parameters and buffers as
	// graph nodes, by their name within the module ("weight",
	// "linear.weight", "running_mean", "weight_mantissas"): RawParam and
	// Buffer return them instead of the store's variables and fail on a
	// name it lacks, and SetBuffer, parametrizations and forward pre-hooks
	// are refused. Eager mode sets it to run modules of one configuration
	// with one executable, their parameters passed as its inputs. When
	// nil (the default), parameters and buffers are the store's variables.
	Params map[string]*graph.Node
}

// WeightAndBias returns the effective "weight" parameter (Param) and,
// when withBias, the effective "bias"; b is nil without a bias.
func (c *Call) WeightAndBias(withBias bool) (w, b *graph.Node, err error) {
	if w, err = c.Param("weight"); err != nil {
		return nil, nil, err
	}
	if withBias {
		if b, err = c.Param("bias"); err != nil {
			return nil, nil, err
		}
	}
	return w, b, nil
}

// Param returns the node of the module's parameter name: its effective
// value, i.e. the stored value passed through the parametrizations
// registered on it (RegisterParametrization), in registration order.
func (c *Call) Param(name string) (*graph.Node, error) {
	w, err := c.RawParam(name)
	if err != nil {
		return nil, err
	}
	if c.Model == nil {
		return w, nil
	}
	ps := c.Model.Parametrizations(c.Path, name)
	if len(ps) > 0 && c.Params != nil {
		return nil, fmt.Errorf("module %s: parameter %s has parametrizations, which cannot apply to a parameter given in Call.Params", c.Path, name)
	}
	for i, p := range ps {
		if w, err = p.Apply(c, name, w); err != nil {
			return nil, fmt.Errorf("module %s: parametrization %d (%s) of %s: %w", c.Path, i, p.Kind(), name, err)
		}
	}
	return w, nil
}

// RawParam returns the node of the module's parameter name as stored,
// without its parametrizations (torch's parametrizations.<name>.original).
func (c *Call) RawParam(name string) (*graph.Node, error) {
	if c.Params != nil {
		return c.given(name, "parameter")
	}
	v := c.Scope.Store().GetVariable(StorePath(Join(c.Path, name)))
	if v == nil {
		return nil, fmt.Errorf("module %s has no parameter %q in the model store", c.Path, name)
	}
	return v.NodeValue(c.Graph), nil
}

// given returns the node Params holds for name (a parameter or buffer of
// the module).
func (c *Call) given(name, what string) (*graph.Node, error) {
	if n, ok := c.Params[name]; ok && n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("module %s: no %s %q among the parameters given to the call", c.Path, what, name)
}

// Constant inits.

// Zeros initialises to 0.
func Zeros(shape []int, _ *rand.Rand) []float32 { return make([]float32, numel(shape)) }

// Ones initialises to 1.
func Ones(shape []int, _ *rand.Rand) []float32 {
	v := make([]float32, numel(shape))
	for i := range v {
		v[i] = 1
	}
	return v
}

// Normal returns an initialiser drawing from N(0, std²), as HF's
// _init_weights does with initializer_range.
func Normal(std float64) Init {
	return func(shape []int, rng *rand.Rand) []float32 {
		v := make([]float32, numel(shape))
		for i := range v {
			v[i] = float32(rng.NormFloat64() * std)
		}
		return v
	}
}

// Uniform returns an initialiser drawing from U(-bound, bound): PyTorch's
// default for Linear (bound = 1/sqrt(in_features), kaiming_uniform with
// a=sqrt(5)).
func Uniform(bound float64) Init {
	return func(shape []int, rng *rand.Rand) []float32 {
		v := make([]float32, numel(shape))
		for i := range v {
			v[i] = float32((2*rng.Float64() - 1) * bound)
		}
		return v
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Model is a module tree with its parameters, held in a GoMLX model.Store
// scoped by module path (bert.encoder.layer.0 → /bert/encoder/layer/0).
type Model struct {
	// Root is the top module (the model class).
	Root Module
	// Store holds every parameter as a GoMLX variable.
	Store *model.Store

	modules []NamedModule
	byPath  map[string]Module
	// hooks holds the parametrizations, forward pre-hooks and buffers
	// (parametrize.go).
	hooks hookSet
}

// NamedModule is a module with its dotted path ("" for the root).
type NamedModule struct {
	Path   string
	Module Module
}

// NewModel builds a Model from its root module: it records every module's
// path and creates every parameter in a new store, initialised from seed.
func NewModel(root Module, seed uint64) (*Model, error) {
	m := &Model{Root: root, Store: model.NewStore(), byPath: map[string]Module{}}
	if err := m.register("", root, newRNG(seed)); err != nil {
		return nil, err
	}
	return m, nil
}

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// register records mod and its subtree under path and creates their
// parameters.
func (m *Model) register(path string, mod Module, rng *rand.Rand) error {
	if _, dup := m.byPath[path]; dup {
		return fmt.Errorf("module path %q appears twice in the model", path)
	}
	m.byPath[path] = mod
	m.modules = append(m.modules, NamedModule{path, mod})
	if err := m.createParams(path, mod, rng); err != nil {
		return err
	}
	if err := m.createDeclaredBuffers(path, mod, rng); err != nil {
		return err
	}
	for _, ch := range mod.Children() {
		if err := m.register(Join(path, ch.Name), ch.Module, rng); err != nil {
			return err
		}
	}
	return nil
}

func (m *Model) createParams(path string, mod Module, rng *rand.Rand) error {
	for _, p := range mod.Params() {
		vals := p.Init(p.Shape, rng)
		if len(vals) != numel(p.Shape) {
			return fmt.Errorf("parameter %s: initialiser gave %d values for shape %v", Join(path, p.Name), len(vals), p.Shape)
		}
		t := tensors.FromFlatDataAndDimensions(vals, p.Shape...)
		v, err := m.Store.CreateVariable(StorePath(Join(path, p.Name)), t)
		if err != nil {
			return fmt.Errorf("creating parameter %s: %w", Join(path, p.Name), err)
		}
		v.SetTrainable(!p.Frozen)
	}
	return nil
}

// AddModule registers a new module (and its subtree) at path, creating its
// parameters with values drawn from seed. The tracer uses it for modules
// created during forward (crossentropyloss_0), passes for inserted modules.
func (m *Model) AddModule(path string, mod Module, seed uint64) error {
	if path == "" {
		return fmt.Errorf("cannot add a module at the root path")
	}
	if _, dup := m.byPath[path]; dup {
		return fmt.Errorf("a module already exists at %q", path)
	}
	return m.register(path, mod, newRNG(seed))
}

// ChildSetter is a module whose children can be replaced (Container).
type ChildSetter interface {
	SetChild(name string, mod Module) error
}

// ReplaceModule swaps the module at path (not the root) for mod: the
// parent's child entry, the path index and the parameters change; the old
// module's parameters are deleted from the store and mod's are created,
// taking the values in values (by parameter name, e.g. "linear.weight")
// and initialising the rest from seed. Graph nodes that call the path now
// call mod. The parametrizations, forward pre-hooks and buffers of the old
// subtree are removed with it.
func (m *Model) ReplaceModule(path string, mod Module, values map[string]*tensors.Tensor, seed uint64) error {
	_, ok := m.byPath[path]
	if !ok || path == "" {
		return fmt.Errorf("replace module: the model has no module %q", path)
	}
	parentPath, name := "", path
	if i := strings.LastIndex(path, "."); i >= 0 {
		parentPath, name = path[:i], path[i+1:]
	}
	parent, ok := m.byPath[parentPath].(ChildSetter)
	if !ok {
		return fmt.Errorf("replace module: the parent of %q (%s) cannot have its children replaced", path, m.byPath[parentPath].TypeName())
	}
	// Check the given values before changing anything.
	specs := map[string]ParamSpec{}
	for _, p := range mod.Params() {
		specs[p.Name] = p
	}
	for k, t := range values {
		p, ok := specs[k]
		if !ok {
			return fmt.Errorf("replace module %s: %s has no parameter %q", path, mod.TypeName(), k)
		}
		if !slices.Equal(t.Shape().Dimensions, p.Shape) {
			return fmt.Errorf("replace module %s: value for %s has shape %v, want %v", path, k, t.Shape().Dimensions, p.Shape)
		}
	}
	if err := parent.SetChild(name, mod); err != nil {
		return err
	}
	// The old modules' parametrizations, pre-hooks and buffers go with
	// them (torch keeps them on the module object, which is replaced).
	if err := m.dropHooksUnder(path); err != nil {
		return fmt.Errorf("replace module %s: %w", path, err)
	}
	// Drop the old subtree from the index and the store.
	at := -1
	kept := m.modules[:0]
	for i, nm := range m.modules {
		if nm.Path == path || strings.HasPrefix(nm.Path, path+".") {
			if at < 0 {
				at = i
			}
			for _, p := range nm.Module.Params() {
				if err := m.Store.DeleteVariable(StorePath(Join(nm.Path, p.Name))); err != nil {
					return fmt.Errorf("replace module %s: %w", path, err)
				}
			}
			delete(m.byPath, nm.Path)
			continue
		}
		kept = append(kept, nm)
	}
	tail := append([]NamedModule(nil), kept[at:]...)
	m.modules = kept[:at]
	if err := m.register(path, mod, newRNG(seed)); err != nil {
		return err
	}
	m.modules = append(m.modules, tail...)
	for k, t := range values {
		v := m.Store.GetVariable(StorePath(Join(path, k)))
		if err := v.SetValue(t); err != nil {
			return fmt.Errorf("replace module %s: setting %s: %w", path, k, err)
		}
	}
	return nil
}

// Join joins a module path and a child name with '.'.
func Join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// StorePath maps a dotted parameter name to its variable path in the store
// ("bert.pooler.dense.weight" → "/bert/pooler/dense/weight").
func StorePath(dotted string) string { return "/" + strings.ReplaceAll(dotted, ".", "/") }

// Module returns the module at a dotted path ("" is the root).
func (m *Model) Module(path string) (Module, bool) {
	mod, ok := m.byPath[path]
	return mod, ok
}

// Modules returns every module with its path, root first, in tree order
// (torch's named_modules).
func (m *Model) Modules() []NamedModule { return append([]NamedModule(nil), m.modules...) }

// Scope returns the store scope of the module at path.
func (m *Model) Scope(path string) *model.Scope {
	if path == "" {
		return m.Store.RootScope()
	}
	return m.Store.Scope(StorePath(path))
}

// Parameter is one named parameter of the model.
type Parameter struct {
	Name     string // dotted HuggingFace name: bert.embeddings.word_embeddings.weight
	Shape    []int
	Variable *model.Variable
	// Frozen is the module's own declaration (ParamSpec.Frozen).
	Frozen bool
}

// Parameters returns every parameter in tree order (torch's
// named_parameters).
func (m *Model) Parameters() []Parameter {
	var out []Parameter
	for _, nm := range m.modules {
		for _, p := range nm.Module.Params() {
			name := Join(nm.Path, p.Name)
			v := m.Store.GetVariable(StorePath(name))
			if v == nil {
				continue
			}
			out = append(out, Parameter{Name: name, Shape: v.Shape().Dimensions, Variable: v, Frozen: p.Frozen})
		}
	}
	return out
}

// NumParameters counts the scalar parameters of the module at path and its
// subtree ("" for the whole model).
func (m *Model) NumParameters(path string) int {
	n := 0
	for _, p := range m.Parameters() {
		if path == "" || p.Name == path || strings.HasPrefix(p.Name, path+".") {
			n += numel(p.Shape)
		}
	}
	return n
}

// ParamValues returns the float32 values of a parameter by dotted name.
func (m *Model) ParamValues(name string) ([]float32, []int, error) {
	v := m.Store.GetVariable(StorePath(name))
	if v == nil {
		return nil, nil, fmt.Errorf("model has no parameter %q", name)
	}
	t, err := v.Value()
	if err != nil {
		return nil, nil, fmt.Errorf("parameter %s: %w", name, err)
	}
	if t.DType() != dtypes.Float32 {
		return nil, nil, fmt.Errorf("parameter %s is %s, want float32", name, t.DType())
	}
	vals, err := tensors.CopyFlatData[float32](t)
	return vals, t.Shape().Dimensions, err
}

// String prints the module tree as PyTorch prints a model.
func (m *Model) String() string {
	var b strings.Builder
	writeModule(&b, m.Root, 0)
	return b.String()
}

func writeModule(b *strings.Builder, mod Module, depth int) {
	children := mod.Children()
	b.WriteString(mod.TypeName())
	b.WriteByte('(')
	if len(children) == 0 {
		b.WriteString(mod.ExtraRepr())
		b.WriteByte(')')
		return
	}
	if extra := mod.ExtraRepr(); extra != "" {
		b.WriteString("\n" + strings.Repeat("  ", depth+1) + extra)
	}
	b.WriteByte('\n')
	for i := 0; i < len(children); i++ {
		ch := children[i]
		b.WriteString(strings.Repeat("  ", depth+1))
		fmt.Fprintf(b, "(%s): ", ch.Name)
		writeModule(b, ch.Module, depth+1)
		b.WriteByte('\n')
	}
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteByte(')')
}

// formatFloat prints a float as Python's repr would in module printouts.
func formatFloat(f float64) string {
	if f != 0 && (math.Abs(f) < 1e-4 || math.Abs(f) >= 1e16) {
		s := fmt.Sprintf("%g", f)
		return strings.Replace(s, "e-0", "e-", 1)
	}
	s := fmt.Sprintf("%v", f)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
