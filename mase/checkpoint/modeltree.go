package checkpoint

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// moduleTree lists a model's modules for the graph file.
func moduleTree(m *nn.Model) []moduleDoc {
	var out []moduleDoc
	for _, nm := range m.Modules() {
		out = append(out, moduleTree1(nm))
	}
	return out
}

// moduleTree1 describes one module for the graph file.
func moduleTree1(nm nn.NamedModule) moduleDoc {
	md := moduleDoc{Path: nm.Path, Type: nm.Module.TypeName(), Extra: nm.Module.ExtraRepr()}
	for _, p := range nm.Module.Params() {
		md.Params = append(md.Params, paramDoc{Name: p.Name, Shape: slices.Clone(p.Shape)})
	}
	return md
}

// describeModule is a module's type, configuration and parameter shapes.
func describeModule(m moduleDoc) string {
	s := fmt.Sprintf("%s(%s)", m.Type, m.Extra)
	for _, p := range m.Params {
		s += fmt.Sprintf(" %s%v", p.Name, p.Shape)
	}
	return s
}

// treeDiff describes the first difference between two module trees, or
// returns "" when they are the same.
func treeDiff(want, got []moduleDoc) string {
	path := func(p string) string {
		if p == "" {
			return "the root"
		}
		return p
	}
	in := func(tree []moduleDoc) map[string]bool {
		set := map[string]bool{}
		for _, m := range tree {
			set[m.Path] = true
		}
		return set
	}
	wantSet, gotSet := in(want), in(got)
	for _, m := range want {
		if !gotSet[m.Path] {
			return fmt.Sprintf("module %s (%s) is missing", path(m.Path), m.Type)
		}
	}
	for _, m := range got {
		if !wantSet[m.Path] {
			return fmt.Sprintf("module %s (%s) is extra", path(m.Path), m.Type)
		}
	}
	for i := range want {
		if want[i].Path != got[i].Path {
			return fmt.Sprintf("module %s is where %s was expected", path(got[i].Path), path(want[i].Path))
		}
		if a, b := describeModule(want[i]), describeModule(got[i]); a != b {
			return fmt.Sprintf("module %s is %s, expected %s", path(want[i].Path), b, a)
		}
	}
	return ""
}

// registryTree builds a registry model, traces it with the input names
// (which registers modules created during forward, such as
// crossentropyloss_0) and returns it with its module tree and the traced
// graph.
func registryTree(name string, seed uint64, inputNames []string, config json.RawMessage) (*nn.Model, []moduleDoc, *ir.Graph, error) {
	m, err := models.NewFromConfig(name, config, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	g, err := trace.Trace(m, inputNames)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("tracing model %s with inputs %v: %w", name, inputNames, err)
	}
	return m, moduleTree(m), g, nil
}

// identify returns the registry name of mg's model and the leaf modules
// that must be re-applied to what models.New builds to get mg's module
// tree; it fails when no registry model leads to the same tree.
func identify(mg *ir.MaseGraph, spec Spec) (string, []replacedDoc, error) {
	if spec.Model != "" {
		replaced, err := replacementsFor(mg, spec.Model, spec.Seed)
		if err != nil {
			return "", nil, fmt.Errorf("Import would rebuild models.New(%q), whose module tree differs from the graph's: %w", spec.Model, err)
		}
		return spec.Model, replaced, nil
	}
	var reasons []string
	for _, name := range models.Names() {
		replaced, err := replacementsFor(mg, name, spec.Seed)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		return name, replaced, nil
	}
	return "", nil, fmt.Errorf("cannot identify the model (root %s) among the registry models; pass Spec{Model: ...} with one of %s "+
		"(Import rebuilds the module tree with models.New, then re-applies replaced leaf modules). Differences: %s",
		mg.Model.Root.TypeName(), strings.Join(models.Names(), ", "), strings.Join(reasons, "; "))
}

// replacementsFor lists the leaf modules of mg that differ from registry
// model name's, and checks that re-applying them rebuilds mg's tree.
func replacementsFor(mg *ir.MaseGraph, name string, seed uint64) ([]replacedDoc, error) {
	config, _ := models.ConfigOf(mg.Model)
	if config != nil {
		// Compare the roots first: another model's config means nothing here.
		def, err := models.New(name, seed)
		if err != nil {
			return nil, err
		}
		if mg.Model.Root.TypeName() != def.Root.TypeName() {
			return nil, fmt.Errorf("the root is %s, the registry model's is %s", mg.Model.Root.TypeName(), def.Root.TypeName())
		}
	}
	m, tree, _, err := registryTree(name, seed, mg.InputNames, config)
	if err != nil {
		return nil, err
	}
	if mg.Model.Root.TypeName() != m.Root.TypeName() {
		return nil, fmt.Errorf("the root is %s, the registry model's is %s", mg.Model.Root.TypeName(), m.Root.TypeName())
	}
	registry := map[string]moduleDoc{}
	for _, md := range tree {
		registry[md.Path] = md
	}
	var replaced []replacedDoc
	for _, nm := range mg.Model.Modules() {
		md := moduleTree1(nm)
		if r, ok := registry[nm.Path]; (ok && describeModule(r) == describeModule(md)) || len(nm.Module.Children()) > 0 {
			continue // the same, or a container (compared below)
		}
		kind, config, err := nn.EncodeModule(nm.Module)
		if err != nil {
			return nil, fmt.Errorf("module %s (%s) differs from the registry model's and %w", nm.Path, nm.Module.TypeName(), err)
		}
		_, exists := registry[nm.Path]
		replaced = append(replaced, replacedDoc{Path: nm.Path, Kind: kind, Config: config, Added: !exists})
	}
	if err := applyReplacements(m, replaced); err != nil {
		return nil, err
	}
	if d := treeDiff(moduleTree(m), moduleTree(mg.Model)); d != "" {
		return nil, fmt.Errorf("%s (only leaf modules can differ from the registry model)", d)
	}
	return replaced, nil
}

// applyReplacements puts each replaced module into m.
func applyReplacements(m *nn.Model, replaced []replacedDoc) error {
	for _, r := range replaced {
		mod, err := nn.DecodeModule(r.Kind, r.Config)
		if err != nil {
			return fmt.Errorf("replaced module %s: %w", r.Path, err)
		}
		if r.Added {
			err = m.AddModule(r.Path, mod, 0)
		} else {
			err = m.ReplaceModule(r.Path, mod, nil, 0)
		}
		if err != nil {
			return fmt.Errorf("replaced module %s: %w", r.Path, err)
		}
	}
	return nil
}

// frozenParameters lists the parameters whose variables were made
// untrainable (beyond those their module declares Frozen).
func frozenParameters(m *nn.Model) []string {
	var out []string
	for _, p := range m.Parameters() {
		if !p.Variable.Trainable && !p.Frozen {
			out = append(out, p.Name)
		}
	}
	return out
}
