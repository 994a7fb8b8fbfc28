package nn

// Module-declared buffers: tensors a module owns from its creation that
// are not parameters (torch's self.register_buffer in a module's
// __init__, such as BatchNorm2d's running_mean and running_var).
//
// A module declares them with BufferDeclarer. The model creates them with
// the module's parameters (NewModel, AddModule, ReplaceModule) as
// non-trainable variables of its store, at StorePath("<module>.<name>"),
// and lists them in Buffers beside the buffers passes register
// (RegisterBuffer), so checkpoints save and restore them. They are not
// parameters: Model.Parameters and NumParameters leave them out, as torch's
// named_parameters does. A leaf reads one with Call.Buffer and, in train
// mode, updates it with Call.SetBuffer: the executors (model.Exec) store
// the new value after each run.
//
// They differ from registered buffers in two ways: RegisterBuffer on a
// module-declared buffer sets its value (how a checkpoint restores it onto
// a freshly built model) instead of failing, and RemoveBuffer refuses them
// (replace the module instead).

import (
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// BufferDeclarer is a module that owns buffers: BufferSpecs declares their
// names (without the module path), shapes and initial values. Init must
// not draw from its random source when the module must leave the seeded
// initialisation of later modules unchanged.
type BufferDeclarer interface {
	Module
	BufferSpecs() []ParamSpec
}

// createDeclaredBuffers creates the buffers mod declares, under path.
func (m *Model) createDeclaredBuffers(path string, mod Module, rng *rand.Rand) error {
	bd, ok := mod.(BufferDeclarer)
	if !ok {
		return nil
	}
	for _, b := range bd.BufferSpecs() {
		name := Join(path, b.Name)
		for _, p := range mod.Params() {
			if p.Name == b.Name {
				return fmt.Errorf("module %s (%s) declares %q as both a parameter and a buffer", path, mod.TypeName(), b.Name)
			}
		}
		vals := b.Init(b.Shape, rng)
		if len(vals) != numel(b.Shape) {
			return fmt.Errorf("buffer %s: initialiser gave %d values for shape %v", name, len(vals), b.Shape)
		}
		if err := m.addDeclaredBuffer(name, tensors.FromFlatDataAndDimensions(vals, b.Shape...)); err != nil {
			return err
		}
	}
	return nil
}

// addDeclaredBuffer creates a module-declared buffer in the store.
func (m *Model) addDeclaredBuffer(name string, value *tensors.Tensor) error {
	m.hooks.mu.Lock()
	defer m.hooks.mu.Unlock()
	if m.hooks.isBuffer[name] {
		return fmt.Errorf("buffer %s already exists", name)
	}
	v, err := m.Store.CreateVariable(StorePath(name), value)
	if err != nil {
		return fmt.Errorf("creating buffer %s: %w", name, err)
	}
	v.SetTrainable(false)
	if m.hooks.isBuffer == nil {
		m.hooks.isBuffer = map[string]bool{}
	}
	if m.hooks.declared == nil {
		m.hooks.declared = map[string]bool{}
	}
	m.hooks.isBuffer[name] = true
	m.hooks.declared[name] = true
	m.hooks.buffers = append(m.hooks.buffers, name)
	return nil
}

// IsDeclaredBuffer reports whether name is a buffer its module declares
// (BufferDeclarer) rather than one registered with RegisterBuffer.
func (m *Model) IsDeclaredBuffer(name string) bool {
	m.hooks.mu.RLock()
	defer m.hooks.mu.RUnlock()
	return m.hooks.declared[name]
}

// setDeclaredBufferLocked sets a module-declared buffer's value, which
// must keep its shape and dtype (RegisterBuffer's restore path). The
// caller holds m.hooks.mu.
func (m *Model) setDeclaredBufferLocked(name string, value *tensors.Tensor) error {
	v := m.Store.GetVariable(StorePath(name))
	if v == nil {
		return fmt.Errorf("buffer %s is declared but missing from the model store", name)
	}
	if !v.Shape().Equal(value.Shape()) {
		return fmt.Errorf("buffer %s is %s; the value given is %s", name, v.Shape(), value.Shape())
	}
	return v.SetValue(value)
}

// Buffer returns the node of buffer name of the module (its own, declared
// or registered: "running_mean"), as the graph currently holds it (the
// value SetBuffer last gave it in this graph, else the stored one).
func (c *Call) Buffer(name string) (*graph.Node, error) {
	if c.Params != nil {
		return c.given(name, "buffer")
	}
	v := c.Scope.Store().GetVariable(StorePath(Join(c.Path, name)))
	if v == nil {
		return nil, fmt.Errorf("module %s has no buffer %q in the model store", c.Path, name)
	}
	return v.NodeValue(c.Graph), nil
}

// SetBuffer gives buffer name of the module a new value computed in the
// graph (BatchNorm2d's running statistics in train mode). The executors
// (model.Exec) write it to the store after each run; value must have the
// buffer's shape and dtype. A call whose parameters are given (Params)
// cannot update buffers: the graph may serve other modules.
func (c *Call) SetBuffer(name string, value *graph.Node) error {
	if c.Params != nil {
		return fmt.Errorf("module %s: cannot update buffer %q: the call's parameters are given (Call.Params), not the store's", c.Path, name)
	}
	v := c.Scope.Store().GetVariable(StorePath(Join(c.Path, name)))
	if v == nil {
		return fmt.Errorf("module %s has no buffer %q in the model store", c.Path, name)
	}
	if v.Trainable {
		return fmt.Errorf("module %s: %q is a trainable variable, not a buffer", c.Path, name)
	}
	if !v.Shape().Equal(value.Shape()) {
		return fmt.Errorf("module %s: buffer %s is %s, the new value is %s", c.Path, name, v.Shape(), value.Shape())
	}
	v.SetNodeValue(value)
	return nil
}
