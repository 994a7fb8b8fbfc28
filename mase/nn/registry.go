package nn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Leaf modules that passes put into a model (LoRALinear, a quantized
// Linear, Identity in place of a Linear, ...) must survive a checkpoint:
// the checkpoint rebuilds the registry model and then re-applies each
// replaced module from its kind and JSON configuration. This file keeps
// the kinds that can be written and read that way.

var (
	kindsMu sync.RWMutex
	kinds   = map[string]func() Module{}
)

func init() {
	RegisterModuleKind("Linear", func() Module { return &Linear{} })
	RegisterModuleKind("LoRALinear", func() Module { return &LoRALinear{} })
	RegisterModuleKind("Dropout", func() Module { return &Dropout{} })
	RegisterModuleKind("LayerNorm", func() Module { return &LayerNorm{} })
	RegisterModuleKind("Embedding", func() Module { return &Embedding{} })
	RegisterModuleKind("ReLU", func() Module { return NewReLU() })
	RegisterModuleKind("Tanh", func() Module { return NewTanh() })
	RegisterModuleKind("Identity", func() Module { return NewIdentity() })
	RegisterModuleKind("LeakyReLU", func() Module { return NewLeakyReLU(DefaultNegativeSlope) })
}

// RegisterModuleKind makes a leaf module kind serialisable: newModule
// returns a fresh module whose exported fields json.Unmarshal fills from
// the configuration EncodeModule wrote. kind must be the module's
// ModuleKind. Registering a kind twice panics (a programming error).
func RegisterModuleKind(kind string, newModule func() Module) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[kind]; dup {
		panic(fmt.Sprintf("nn: module kind %q registered twice", kind))
	}
	kinds[kind] = newModule
}

// ModuleKinds lists the registered kinds, sorted.
func ModuleKinds() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Kinded is a module that names its own serialisation kind (a module of
// another package whose Go type name would clash with one of nn's).
type Kinded interface {
	ModuleKind() string
}

// ModuleKind names a module's kind for serialisation: the kind a Kinded
// module gives, else its Go type name for struct modules (Linear,
// LoRALinear), its TypeName for the parameterless activations (ReLU,
// Tanh, Identity).
func ModuleKind(mod Module) string {
	if k, ok := mod.(Kinded); ok {
		return k.ModuleKind()
	}
	if a, ok := mod.(*activation); ok {
		return a.name
	}
	t := reflect.TypeOf(mod)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// EncodeModule returns a leaf module's kind and JSON configuration (its
// exported fields). Modules with children, and kinds never registered,
// cannot be encoded.
func EncodeModule(mod Module) (kind string, config json.RawMessage, err error) {
	kind = ModuleKind(mod)
	kindsMu.RLock()
	_, ok := kinds[kind]
	kindsMu.RUnlock()
	if !ok {
		return "", nil, fmt.Errorf("module kind %s (%s) cannot be saved: registered kinds are %s", kind, mod.TypeName(), strings.Join(ModuleKinds(), ", "))
	}
	if len(mod.Children()) > 0 {
		return "", nil, fmt.Errorf("module kind %s has submodules; only leaf modules can be saved by configuration", kind)
	}
	if _, isActivation := mod.(*activation); isActivation {
		return kind, json.RawMessage("{}"), nil
	}
	config, err = json.Marshal(mod)
	if err != nil {
		return "", nil, fmt.Errorf("module kind %s: encoding its configuration: %w", kind, err)
	}
	return kind, config, nil
}

// Validator is implemented by modules that check a decoded configuration.
type Validator interface {
	Validate() error
}

// DecodeModule rebuilds a leaf module from EncodeModule's output. Unknown
// kinds, unknown configuration fields and configurations the module's
// Validate rejects are errors.
func DecodeModule(kind string, config json.RawMessage) (Module, error) {
	kindsMu.RLock()
	newModule, ok := kinds[kind]
	kindsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown module kind %q (allowed: %s)", kind, strings.Join(ModuleKinds(), ", "))
	}
	mod := newModule()
	if _, isActivation := mod.(*activation); !isActivation && len(config) > 0 {
		dec := json.NewDecoder(bytes.NewReader(config))
		dec.DisallowUnknownFields()
		if err := dec.Decode(mod); err != nil {
			return nil, fmt.Errorf("module kind %s: configuration %s: %w", kind, config, err)
		}
	}
	if v, ok := mod.(Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("module kind %s: %w", kind, err)
		}
	}
	return mod, nil
}
