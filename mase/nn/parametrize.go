package nn

// Parametrizations, forward pre-hooks and buffers: torch's
// torch.nn.utils.parametrize.register_parametrization,
// Module.register_forward_pre_hook and Module.register_buffer, kept on the
// Model by module path so that they work for every leaf without editing it.
//
//   - A Parametrization makes a parameter's effective value a function of
//     its stored value. Call.Param applies the parametrizations registered
//     on (module, parameter) in registration order whenever a leaf fetches
//     the parameter, so a mask on "weight" reaches Linear, a quantized
//     Linear or any future leaf that reads its weight with c.Param.
//   - A ForwardPreHook rewrites a leaf's arguments before its Forward
//     (Call.Forward runs the hooks, then the leaf).
//   - A buffer is a non-trainable tensor of the model (a pruning mask),
//     held in the model store at StorePath(name) with Trainable = false,
//     so optimisers that train the store's trainable variables never move
//     it. Buffers are not parameters: Model.Parameters, parameter counts
//     and safetensors state files leave them out (torch's non-persistent
//     buffers); Buffers lists them for a checkpoint that wants them.
//
// Parametrizations and hooks are values with exported fields and a Kind;
// HookRecords encodes them as (module, parameter, kind, JSON config) and
// RestoreHooks rebuilds them from the kinds registered with
// RegisterHookKind, so a checkpoint can record them beside the buffers.
//
// Graphs are built when first run: register parametrizations and hooks
// before compiling (execute.Compile, train.New); executables compiled
// earlier keep the computation they were built with.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Parametrization computes a parameter's effective value from its stored
// value (torch.nn.utils.parametrize). Implementations must be JSON
// encodable through their exported fields and registered with
// RegisterHookKind to be restorable from a checkpoint.
type Parametrization interface {
	// Kind names the parametrization's type for listings and checkpoints
	// ("mask").
	Kind() string
	// Apply returns the effective value of parameter param of the module
	// at c.Path, given w: the stored value, or the previous
	// parametrization's output.
	Apply(c *Call, param string, w *graph.Node) (*graph.Node, error)
}

// ForwardPreHook rewrites a leaf module's arguments before its Forward
// (torch's register_forward_pre_hook). Implementations must be JSON
// encodable through their exported fields and registered with
// RegisterHookKind to be restorable from a checkpoint.
type ForwardPreHook interface {
	// Kind names the hook's type for listings and checkpoints
	// ("sparsify_input").
	Kind() string
	// Apply returns the arguments the module's Forward gets instead of
	// args and kwargs.
	Apply(c *Call, args []any, kwargs map[string]any) ([]any, map[string]any, error)
}

// hookSet is the Model's registry of parametrizations, pre-hooks and
// buffers; its zero value is empty and ready.
type hookSet struct {
	mu       sync.RWMutex
	params   map[paramKey][]Parametrization
	pre      map[string][]ForwardPreHook
	buffers  []string // dotted names, in registration order
	isBuffer map[string]bool
	declared map[string]bool // buffers their modules declare (buffers.go)
}

type paramKey struct{ module, param string }

// Forward runs leaf on args: first the forward pre-hooks registered on
// c.Path (when c.Model is set), in registration order, then leaf.Forward.
func (c *Call) Forward(leaf Leaf, args []any, kwargs map[string]any) (any, error) {
	if c.Model != nil {
		hooks := c.Model.ForwardPreHooks(c.Path)
		if len(hooks) > 0 && c.Params != nil {
			return nil, fmt.Errorf("module %s: forward pre-hooks cannot run on a call whose parameters are given (Call.Params)", c.Path)
		}
		for i, h := range hooks {
			var err error
			if args, kwargs, err = h.Apply(c, args, kwargs); err != nil {
				return nil, fmt.Errorf("module %s: forward pre-hook %d (%s): %w", c.Path, i, h.Kind(), err)
			}
		}
	}
	return leaf.Forward(c, args, kwargs)
}

// paramSpec returns the declared parameter param of the module at path.
func (m *Model) paramSpec(path, param string) (ParamSpec, error) {
	mod, ok := m.byPath[path]
	if !ok {
		return ParamSpec{}, fmt.Errorf("the model has no module %q", path)
	}
	var names []string
	for _, p := range mod.Params() {
		if p.Name == param {
			return p, nil
		}
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return ParamSpec{}, fmt.Errorf("module %s (%s) has no parameter %q: it has no parameters", path, mod.TypeName(), param)
	}
	return ParamSpec{}, fmt.Errorf("module %s (%s) has no parameter %q (it has: %s)", path, mod.TypeName(), param, strings.Join(names, ", "))
}

// RegisterParametrization adds p to the parametrizations of parameter
// param of the module at path; it applies after those registered before.
// The module must declare the parameter.
func (m *Model) RegisterParametrization(path, param string, p Parametrization) error {
	if p == nil {
		return fmt.Errorf("register parametrization on %s: the parametrization is nil", Join(path, param))
	}
	if _, err := m.paramSpec(path, param); err != nil {
		return fmt.Errorf("register parametrization %s: %w", p.Kind(), err)
	}
	m.hooks.mu.Lock()
	defer m.hooks.mu.Unlock()
	if m.hooks.params == nil {
		m.hooks.params = map[paramKey][]Parametrization{}
	}
	k := paramKey{path, param}
	m.hooks.params[k] = append(m.hooks.params[k], p)
	return nil
}

// Parametrizations returns the parametrizations of parameter param of the
// module at path, in application order (none: nil).
func (m *Model) Parametrizations(path, param string) []Parametrization {
	m.hooks.mu.RLock()
	defer m.hooks.mu.RUnlock()
	return slices.Clone(m.hooks.params[paramKey{path, param}])
}

// IsParametrized reports whether parameter param of the module at path
// has a parametrization (param "" : any parameter of the module).
func (m *Model) IsParametrized(path, param string) bool {
	m.hooks.mu.RLock()
	defer m.hooks.mu.RUnlock()
	for k, ps := range m.hooks.params {
		if k.module == path && (param == "" || k.param == param) && len(ps) > 0 {
			return true
		}
	}
	return false
}

// RemoveParametrizations removes the parametrizations of parameter param
// of the module at path for which drop returns true (drop nil: all of
// them) and returns how many it removed. The stored value is left as it
// is (torch's remove_parametrizations with leave_parametrized=False); see
// BakeParametrizations to keep the effective value.
func (m *Model) RemoveParametrizations(path, param string, drop func(Parametrization) bool) int {
	m.hooks.mu.Lock()
	defer m.hooks.mu.Unlock()
	k := paramKey{path, param}
	old := m.hooks.params[k]
	var kept []Parametrization
	for _, p := range old {
		if drop != nil && !drop(p) {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		delete(m.hooks.params, k)
	} else {
		m.hooks.params[k] = kept
	}
	return len(old) - len(kept)
}

// EffectiveParam computes the effective value of a parameter (dotted
// name, e.g. "classifier.weight") on backend be: its stored value through
// its parametrizations, as leaves see it in eval mode. For a parameter
// without parametrizations it is the variable's own tensor (not to be
// finalized); otherwise a new tensor, the caller's. EffectiveParamData
// copies the values out and frees what it computed.
func (m *Model) EffectiveParam(be compute.Backend, name string) (*tensors.Tensor, error) {
	path, param, ok := m.splitName(name)
	if !ok {
		return nil, fmt.Errorf("effective value of %s: no module of the model prefixes the name", name)
	}
	if _, err := m.paramSpec(path, param); err != nil {
		return nil, fmt.Errorf("effective value of %s: %w", name, err)
	}
	v := m.Store.GetVariable(StorePath(name))
	if v == nil {
		return nil, fmt.Errorf("effective value of %s: the model store has no variable for it", name)
	}
	if !m.IsParametrized(path, param) {
		return v.Value()
	}
	var buildErr error
	t, err := model.CallOnce(be, m.Store, func(scope *model.Scope, g *graph.Graph) *graph.Node {
		c := &Call{Graph: g, Scope: m.Scope(path), Path: path, Model: m}
		n, err := c.Param(param)
		if err != nil {
			buildErr = err
			return v.NodeValue(g)
		}
		return n
	})
	if buildErr != nil {
		return nil, fmt.Errorf("effective value of %s: %w", name, buildErr)
	}
	if err != nil {
		return nil, fmt.Errorf("effective value of %s: %w", name, err)
	}
	return t, nil
}

// EffectiveParamData is EffectiveParam's values as float32, copied to the
// host, with their dimensions; a value computed for the call is freed
// before it returns.
func (m *Model) EffectiveParamData(be compute.Backend, name string) ([]float32, []int, error) {
	t, err := m.EffectiveParam(be, name)
	if err != nil {
		return nil, nil, err
	}
	dims := t.Shape().Dimensions
	vals, err := tensors.CopyFlatData[float32](t)
	if path, param, _ := m.splitName(name); m.IsParametrized(path, param) {
		_ = t.FinalizeAll() // computed here, not the variable's own value
	}
	if err != nil {
		return nil, nil, fmt.Errorf("effective value of %s: %w", name, err)
	}
	return vals, dims, nil
}

// BakeParametrizations writes the effective value of parameter param of
// the module at path into the store and removes its parametrizations
// (torch's remove_parametrizations with leave_parametrized=True). Buffers
// the parametrizations used are kept; remove them with RemoveBuffer.
func (m *Model) BakeParametrizations(be compute.Backend, path, param string) error {
	name := Join(path, param)
	if !m.IsParametrized(path, param) {
		return fmt.Errorf("bake parametrizations: %s has none", name)
	}
	t, err := m.EffectiveParam(be, name)
	if err != nil {
		return fmt.Errorf("bake parametrizations: %w", err)
	}
	if err := m.Store.GetVariable(StorePath(name)).SetValue(t); err != nil {
		return fmt.Errorf("bake parametrizations: setting %s: %w", name, err)
	}
	m.RemoveParametrizations(path, param, nil)
	return nil
}

// splitName splits a dotted parameter or buffer name into its module
// path and the name within the module, taking the longest module path
// that prefixes it: "a.b.weight" → ("a.b", "weight"), and LoRALinear's
// "a.q.linear.weight" → ("a.q", "linear.weight") since "a.q.linear" is no
// module. A name without dots belongs to the root module. ok is false
// when no module of the model prefixes a dotted name.
func (m *Model) splitName(name string) (path, attr string, ok bool) {
	for i := strings.LastIndex(name, "."); i >= 0; i = strings.LastIndex(name[:i], ".") {
		if _, found := m.byPath[name[:i]]; found {
			return name[:i], name[i+1:], true
		}
	}
	if name != "" && !strings.Contains(name, ".") {
		return "", name, true // a name of the root module
	}
	return "", "", false
}

// RegisterForwardPreHook adds h to the forward pre-hooks of the leaf
// module at path; it runs after those registered before.
func (m *Model) RegisterForwardPreHook(path string, h ForwardPreHook) error {
	if h == nil {
		return fmt.Errorf("register forward pre-hook on %s: the hook is nil", path)
	}
	mod, ok := m.byPath[path]
	if !ok {
		return fmt.Errorf("register forward pre-hook %s: the model has no module %q", h.Kind(), path)
	}
	if _, leaf := mod.(Leaf); !leaf {
		return fmt.Errorf("register forward pre-hook %s: module %s (%s) is not a leaf; hooks run only on leaf modules", h.Kind(), path, mod.TypeName())
	}
	m.hooks.mu.Lock()
	defer m.hooks.mu.Unlock()
	if m.hooks.pre == nil {
		m.hooks.pre = map[string][]ForwardPreHook{}
	}
	m.hooks.pre[path] = append(m.hooks.pre[path], h)
	return nil
}

// ForwardPreHooks returns the forward pre-hooks of the module at path, in
// run order (none: nil).
func (m *Model) ForwardPreHooks(path string) []ForwardPreHook {
	m.hooks.mu.RLock()
	defer m.hooks.mu.RUnlock()
	return slices.Clone(m.hooks.pre[path])
}

// RemoveForwardPreHooks removes the forward pre-hooks of the module at
// path for which drop returns true (drop nil: all of them) and returns how
// many it removed.
func (m *Model) RemoveForwardPreHooks(path string, drop func(ForwardPreHook) bool) int {
	m.hooks.mu.Lock()
	defer m.hooks.mu.Unlock()
	old := m.hooks.pre[path]
	var kept []ForwardPreHook
	for _, h := range old {
		if drop != nil && !drop(h) {
			kept = append(kept, h)
		}
	}
	if len(kept) == 0 {
		delete(m.hooks.pre, path)
	} else {
		m.hooks.pre[path] = kept
	}
	return len(old) - len(kept)
}

// Buffer is a non-trainable tensor of the model (torch's buffer), such as
// a pruning mask.
type Buffer struct {
	Name     string // dotted name: classifier.weight_mask
	Variable *model.Variable
}

// RegisterBuffer creates the buffer name (dotted: "<module>.<attr>", the
// module must exist) in the model store with value, not trainable. A name
// already used by a parameter or another buffer is an error, except a
// buffer its module declares (BufferDeclarer, see buffers.go), which
// exists from the module's creation: registering it sets its value, which
// must keep its shape (how checkpoints restore running statistics).
func (m *Model) RegisterBuffer(name string, value *tensors.Tensor) (*model.Variable, error) {
	if value == nil {
		return nil, fmt.Errorf("register buffer %s: the value is nil", name)
	}
	m.hooks.mu.Lock()
	if m.hooks.declared[name] {
		defer m.hooks.mu.Unlock()
		if err := m.setDeclaredBufferLocked(name, value); err != nil {
			return nil, fmt.Errorf("register buffer %s: %w", name, err)
		}
		return m.Store.GetVariable(StorePath(name)), nil
	}
	m.hooks.mu.Unlock()
	path, attr, ok := m.splitName(name)
	if !ok || attr == "" {
		return nil, fmt.Errorf("register buffer %q: want a dotted name <module>.<attribute> naming a module of the model", name)
	}
	mod := m.byPath[path]
	for _, p := range mod.Params() {
		if p.Name == attr {
			return nil, fmt.Errorf("register buffer %s: module %s already has a parameter %q", name, path, attr)
		}
	}
	m.hooks.mu.Lock()
	defer m.hooks.mu.Unlock()
	if m.hooks.isBuffer[name] {
		return nil, fmt.Errorf("register buffer %s: a buffer of that name exists (remove it first, or set its value)", name)
	}
	v, err := m.Store.CreateVariable(StorePath(name), value)
	if err != nil {
		return nil, fmt.Errorf("register buffer %s: %w", name, err)
	}
	v.SetTrainable(false)
	if m.hooks.isBuffer == nil {
		m.hooks.isBuffer = map[string]bool{}
	}
	m.hooks.isBuffer[name] = true
	m.hooks.buffers = append(m.hooks.buffers, name)
	return v, nil
}

// Buffer returns the variable of buffer name, or false.
func (m *Model) Buffer(name string) (*model.Variable, bool) {
	m.hooks.mu.RLock()
	ok := m.hooks.isBuffer[name]
	m.hooks.mu.RUnlock()
	if !ok {
		return nil, false
	}
	v := m.Store.GetVariable(StorePath(name))
	return v, v != nil
}

// Buffers lists the buffers in creation order: those modules declare
// (BufferDeclarer, created with the module) and those registered with
// RegisterBuffer.
func (m *Model) Buffers() []Buffer {
	m.hooks.mu.RLock()
	defer m.hooks.mu.RUnlock()
	out := make([]Buffer, 0, len(m.hooks.buffers))
	for _, name := range m.hooks.buffers {
		if v := m.Store.GetVariable(StorePath(name)); v != nil {
			out = append(out, Buffer{Name: name, Variable: v})
		}
	}
	return out
}

// RemoveBuffer deletes buffer name from the model and its store.
// A buffer its module declares (BatchNorm2d's running_mean) cannot be
// removed: it goes with its module (ReplaceModule).
func (m *Model) RemoveBuffer(name string) error {
	m.hooks.mu.Lock()
	defer m.hooks.mu.Unlock()
	if m.hooks.declared[name] {
		return fmt.Errorf("remove buffer: %s is declared by its module; replace the module to drop it", name)
	}
	return m.removeBufferLocked(name)
}

func (m *Model) removeBufferLocked(name string) error {
	if !m.hooks.isBuffer[name] {
		return fmt.Errorf("remove buffer: the model has no buffer %q", name)
	}
	if err := m.Store.DeleteVariable(StorePath(name)); err != nil {
		return fmt.Errorf("remove buffer %s: %w", name, err)
	}
	delete(m.hooks.isBuffer, name)
	delete(m.hooks.declared, name)
	m.hooks.buffers = slices.DeleteFunc(m.hooks.buffers, func(b string) bool { return b == name })
	return nil
}

// dropHooksUnder removes every parametrization, pre-hook and buffer of
// the module at path and its submodules.
func (m *Model) dropHooksUnder(path string) error {
	under := func(p string) bool { return p == path || strings.HasPrefix(p, path+".") }
	m.hooks.mu.Lock()
	defer m.hooks.mu.Unlock()
	for k := range m.hooks.params {
		if under(k.module) {
			delete(m.hooks.params, k)
		}
	}
	for p := range m.hooks.pre {
		if under(p) {
			delete(m.hooks.pre, p)
		}
	}
	for _, b := range slices.Clone(m.hooks.buffers) {
		if under(b) {
			if err := m.removeBufferLocked(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// HookRecord is the serialisable form of one parametrization (Param set)
// or forward pre-hook (Param empty): the module, its kind and its JSON
// configuration (exported fields).
type HookRecord struct {
	Module string          `json:"module"`
	Param  string          `json:"param,omitempty"`
	Kind   string          `json:"kind"`
	Config json.RawMessage `json:"config"`
}

var (
	hookKindsMu sync.RWMutex
	hookKinds   = map[string]func() any{}
)

// RegisterHookKind makes a parametrization or forward pre-hook kind
// restorable: newHook returns a fresh value (a Parametrization or a
// ForwardPreHook) that json.Unmarshal fills from the configuration
// HookRecords wrote. Registering a kind twice panics (a programming
// error).
func RegisterHookKind(kind string, newHook func() any) {
	hookKindsMu.Lock()
	defer hookKindsMu.Unlock()
	if _, dup := hookKinds[kind]; dup {
		panic(fmt.Sprintf("nn: hook kind %q registered twice", kind))
	}
	hookKinds[kind] = newHook
}

// HookKinds lists the registered parametrization and pre-hook kinds,
// sorted.
func HookKinds() []string {
	hookKindsMu.RLock()
	defer hookKindsMu.RUnlock()
	out := make([]string, 0, len(hookKinds))
	for k := range hookKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// HookRecords encodes every parametrization and forward pre-hook, in
// module order (parametrizations of a module before its pre-hooks, each in
// registration order). Buffers are not included: save Buffers' values
// beside them.
func (m *Model) HookRecords() ([]HookRecord, error) {
	var out []HookRecord
	enc := func(module, param, kind string, h any) error {
		cfg, err := json.Marshal(h)
		if err != nil {
			return fmt.Errorf("encoding %s hook on %s: %w", kind, Join(module, param), err)
		}
		out = append(out, HookRecord{Module: module, Param: param, Kind: kind, Config: cfg})
		return nil
	}
	for _, nm := range m.modules {
		for _, p := range nm.Module.Params() {
			for _, pz := range m.Parametrizations(nm.Path, p.Name) {
				if err := enc(nm.Path, p.Name, pz.Kind(), pz); err != nil {
					return nil, err
				}
			}
		}
		for _, h := range m.ForwardPreHooks(nm.Path) {
			if err := enc(nm.Path, "", h.Kind(), h); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// RestoreHooks registers the parametrizations and pre-hooks of records
// (from HookRecords) on m, after the existing ones. Every record is decoded
// and checked before anything is registered; unknown kinds and unknown
// configuration fields are errors.
func (m *Model) RestoreHooks(records []HookRecord) error {
	type pending struct {
		rec HookRecord
		h   any
	}
	var todo []pending
	for i, r := range records {
		hookKindsMu.RLock()
		newHook, ok := hookKinds[r.Kind]
		hookKindsMu.RUnlock()
		if !ok {
			return fmt.Errorf("restore hooks: record %d (%s): unknown kind %q (allowed: %s)", i, Join(r.Module, r.Param), r.Kind, strings.Join(HookKinds(), ", "))
		}
		h := newHook()
		if len(r.Config) > 0 {
			dec := json.NewDecoder(bytes.NewReader(r.Config))
			dec.DisallowUnknownFields()
			if err := dec.Decode(h); err != nil {
				return fmt.Errorf("restore hooks: record %d (%s on %s): configuration %s: %w", i, r.Kind, Join(r.Module, r.Param), r.Config, err)
			}
		}
		if r.Param != "" {
			if _, ok := h.(Parametrization); !ok {
				return fmt.Errorf("restore hooks: record %d: kind %s is not a parametrization, but the record names parameter %s", i, r.Kind, r.Param)
			}
			if _, err := m.paramSpec(r.Module, r.Param); err != nil {
				return fmt.Errorf("restore hooks: record %d (%s): %w", i, r.Kind, err)
			}
		} else {
			if _, ok := h.(ForwardPreHook); !ok {
				return fmt.Errorf("restore hooks: record %d: kind %s is not a forward pre-hook, and the record names no parameter", i, r.Kind)
			}
			mod, ok := m.byPath[r.Module]
			if !ok {
				return fmt.Errorf("restore hooks: record %d (%s): the model has no module %q", i, r.Kind, r.Module)
			}
			if _, leaf := mod.(Leaf); !leaf {
				return fmt.Errorf("restore hooks: record %d (%s): module %s is not a leaf", i, r.Kind, r.Module)
			}
		}
		todo = append(todo, pending{r, h})
	}
	for _, p := range todo {
		var err error
		if p.rec.Param != "" {
			err = m.RegisterParametrization(p.rec.Module, p.rec.Param, p.h.(Parametrization))
		} else {
			err = m.RegisterForwardPreHook(p.rec.Module, p.h.(ForwardPreHook))
		}
		if err != nil {
			return fmt.Errorf("restore hooks: %w", err)
		}
	}
	return nil
}
