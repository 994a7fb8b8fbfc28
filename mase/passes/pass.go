package passes

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/gomase/gomase/mase/ir"
)

// Pass is one named MaseGraph pass: Run takes the graph and the pass's
// argument (nil when the caller gave none) and returns the graph and what
// the pass found. Build one from a typed function with NoArgs or
// WithArgs; the CLI, Pipeline and compiled mode's rewrites
// (package compileopt) all run passes through this type.
type Pass struct {
	// Name is MASE's name (remove_dropout_transform_pass); Short drops
	// its _analysis_pass or _transform_pass suffix.
	Name string
	// Doc says what the pass does, in one line.
	Doc string
	// Run applies the pass.
	Run func(mg *ir.MaseGraph, arg any) (*ir.MaseGraph, Info, error)
}

// Changed is the Info key under which transform passes report how many
// nodes they changed (compiled mode's rewrite report reads it).
const Changed = "changed"

// Short is the pass's name without MASE's _analysis_pass or
// _transform_pass suffix (remove_dropout), the form the CLI and compiled
// mode's --rewrites take.
func (p Pass) Short() string { return shortName(p.Name) }

func shortName(name string) string {
	for _, suffix := range []string{"_analysis_pass", "_transform_pass"} {
		if s, ok := strings.CutSuffix(name, suffix); ok {
			return s
		}
	}
	return name
}

// NoArgs makes a Pass of a function that takes only the graph; giving it
// an argument is an error.
func NoArgs(name, doc string, fn func(*ir.MaseGraph) (*ir.MaseGraph, Info, error)) Pass {
	return Pass{Name: name, Doc: doc, Run: func(mg *ir.MaseGraph, arg any) (*ir.MaseGraph, Info, error) {
		if arg != nil {
			return nil, nil, fmt.Errorf("takes no arguments, got %T", arg)
		}
		return fn(mg)
	}}
}

// WithArgs makes a Pass of a function with typed arguments A. Run accepts
// an A or *A; a MASE pass_args map when parse is given (it turns the map
// into an A); and nil when def is given (it makes the arguments for the
// graph) — without def, leaving the arguments out is an error.
func WithArgs[A any](name, doc string, fn func(*ir.MaseGraph, A) (*ir.MaseGraph, Info, error),
	parse func(map[string]any) (A, error), def func(*ir.MaseGraph) (A, error)) Pass {
	typeName := reflect.TypeFor[A]().Name()
	allowed := "a " + typeName
	if parse != nil {
		allowed += " or a MASE config map"
	}
	orNone := ""
	if def != nil {
		orNone = " (or none, for the default)"
	}
	return Pass{Name: name, Doc: doc, Run: func(mg *ir.MaseGraph, arg any) (*ir.MaseGraph, Info, error) {
		var a A
		var err error
		switch v := arg.(type) {
		case nil:
			if def == nil {
				return nil, nil, fmt.Errorf("no arguments: give %s, or skip the pass", allowed)
			}
			a, err = def(mg)
		case A:
			a = v
		case *A:
			a = *v
		case map[string]any:
			if parse == nil {
				return nil, nil, fmt.Errorf("arguments must be %s, got a config map", allowed)
			}
			a, err = parse(v)
		default:
			return nil, nil, fmt.Errorf("arguments must be %s%s, got %T", allowed, orNone, arg)
		}
		if err != nil {
			return nil, nil, err
		}
		return fn(mg, a)
	}}
}

// Registry finds passes by name: MASE's name or its short form.
type Registry struct {
	byName map[string]Pass
}

// NewRegistry makes a registry of the given passes; two passes with the
// same name (or short name) are an error.
func NewRegistry(ps ...Pass) (*Registry, error) {
	r := &Registry{byName: map[string]Pass{}}
	return r, r.Add(ps...)
}

// Add adds passes to the registry; on an error it adds none.
func (r *Registry) Add(ps ...Pass) error {
	taken := map[string]bool{}
	for _, p := range ps {
		if p.Name == "" || p.Run == nil {
			return fmt.Errorf("pass %q: a pass needs a name and a Run function", p.Name)
		}
		names := []string{p.Name}
		if p.Short() != p.Name {
			names = append(names, p.Short())
		}
		for _, name := range names {
			if _, ok := r.byName[name]; ok || taken[name] {
				return fmt.Errorf("pass %q is registered twice", name)
			}
			taken[name] = true
		}
	}
	for _, p := range ps {
		r.byName[p.Name] = p
		r.byName[p.Short()] = p
	}
	return nil
}

// Lookup returns the pass called name (MASE's name or its short form), or
// an error listing the allowed names.
func (r *Registry) Lookup(name string) (Pass, error) {
	if p, ok := r.byName[name]; ok {
		return p, nil
	}
	return Pass{}, fmt.Errorf("unknown pass %q (allowed: %s)", name, strings.Join(r.ShortNames(), ", "))
}

// Passes lists the registered passes, sorted by name.
func (r *Registry) Passes() []Pass {
	var out []Pass
	for name, p := range r.byName {
		if name == p.Name {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ShortNames lists the registered passes' short names, sorted.
func (r *Registry) ShortNames() []string {
	var out []string
	for _, p := range r.Passes() {
		out = append(out, p.Short())
	}
	sort.Strings(out)
	return out
}

// Pipeline makes a Pipeline of the named passes, in order.
func (r *Registry) Pipeline(names ...string) (*Pipeline, error) {
	p := &Pipeline{}
	for _, name := range names {
		ps, err := r.Lookup(name)
		if err != nil {
			return nil, err
		}
		p.Passes = append(p.Passes, ps)
	}
	return p, nil
}
