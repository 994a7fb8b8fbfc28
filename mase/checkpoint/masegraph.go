package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	_ "github.com/gomase/gomase/mase/nn/packed"    // the packed modules' kinds, for DecodeModule
	_ "github.com/gomase/gomase/mase/nn/prune"     // the mask and pre-hook kinds, for RestoreHooks
	_ "github.com/gomase/gomase/mase/nn/quantized" // the quantised Linear's kind, for DecodeModule
	"github.com/gomase/gomase/mase/safetensors"
	"github.com/gomase/gomase/mase/trace"
)

// Spec names the registry model (models.New) that Import rebuilds a
// MaseGraph's module tree from: module trees are Go code, so the checkpoint
// stores the model's name, not its modules.
type Spec struct {
	// Model is a name of models.Names ("bert-tiny", "mlp"). Empty lets
	// Export identify it by comparing module trees.
	Model string
	// Seed is passed to models.New on import. The checkpoint overwrites
	// every parameter, so it only matters for values not stored (none for
	// the registry's models); it is recorded for reproducibility.
	Seed uint64
}

// The graph file's format name and version. Version 2 files are sealed
// with a checksum (seal.go); version 1 files, written before, have none and
// still import.
const (
	graphFormat  = "gomase.masegraph"
	graphVersion = 2
)

// graphDoc is the content of <base>.json.
type graphDoc struct {
	// Checksum is "sha256:<hex>" of the file without its checksum line
	// (version 2 on; see seal.go).
	Checksum   string      `json:"checksum,omitempty"`
	Format     string      `json:"format"`
	Version    int         `json:"version"`
	Model      modelDoc    `json:"model"`
	Parameters paramsDoc   `json:"parameters"`
	InputNames []string    `json:"input_names"`
	Modules    []moduleDoc `json:"modules"`
	// Replaced are the leaf modules that differ from the registry model's
	// (LoRALinear, quantized Linears, ...), re-applied on import.
	Replaced []replacedDoc `json:"replaced,omitempty"`
	// Frozen are the parameters a pass or the user froze (their GoMLX
	// variables are not trainable), so training resumes as it was set up.
	Frozen []string `json:"frozen_parameters,omitempty"`
	// Buffers are non-trainable tensors (pruning masks) stored in the
	// safetensors file beside the parameters; Hooks are the
	// parametrisations and forward pre-hooks that use them.
	Buffers []string        `json:"buffers,omitempty"`
	Hooks   []nn.HookRecord `json:"hooks,omitempty"`
	Nodes   []nodeDoc       `json:"nodes"`
	Meta    graphMeta       `json:"meta"`
}

type modelDoc struct {
	Name string `json:"name"`
	Seed uint64 `json:"seed"`
	// Config is the registry model's configuration (models.ConfigOf),
	// when it has one: another hidden size, layer count, label count...
	Config json.RawMessage `json:"config,omitempty"`
}

// paramsDoc ties the JSON to its safetensors file.
type paramsDoc struct {
	File   string `json:"file"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	Count  int    `json:"count"`
}

// moduleDoc is one module of the tree, to check the rebuilt model.
type moduleDoc struct {
	Path   string     `json:"path"`
	Type   string     `json:"type"`
	Extra  string     `json:"extra_repr,omitempty"`
	Params []paramDoc `json:"params,omitempty"`
}

// replacedDoc is a leaf module put in place of the registry model's module
// at Path (or added there when the registry has none).
type replacedDoc struct {
	Path   string          `json:"path"`
	Kind   string          `json:"kind"`
	Config json.RawMessage `json:"config"`
	Added  bool            `json:"added,omitempty"`
}

type paramDoc struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

type nodeDoc struct {
	Name   string          `json:"name"`
	Op     ir.OpKind       `json:"op"`
	Target string          `json:"target"`
	Args   json.RawMessage `json:"args"`   // array of tagged values, or null
	Kwargs json.RawMessage `json:"kwargs"` // object of tagged values, or null
	Meta   *metaDoc        `json:"meta"`   // null before InitMetadata
}

// metaDoc is a node's ir.Meta. Hardware's free-form maps and the software
// section use the tagged value encoding, so their numbers keep their types.
type metaDoc struct {
	Common            ir.Common       `json:"common"`
	Values            *valuesDoc      `json:"values,omitempty"`
	Hardware          ir.Hardware     `json:"hardware"`
	HardwareInterface json.RawMessage `json:"hardware_interface,omitempty"`
	HardwareVerilog   json.RawMessage `json:"hardware_verilog_param,omitempty"`
	Software          json.RawMessage `json:"software"`
}

// valuesDoc keeps the recorded values (ArgInfo.Value) that are not
// tensors: constants such as a getitem index or a view shape.
type valuesDoc struct {
	Args    map[string]json.RawMessage `json:"args,omitempty"`
	Results map[string]json.RawMessage `json:"results,omitempty"`
}

type graphMeta struct {
	NodesIn  []string        `json:"nodes_in,omitempty"`
	NodesOut []string        `json:"nodes_out,omitempty"`
	Hardware json.RawMessage `json:"hardware,omitempty"`
}

// Paths returns the two files of the checkpoint at base: base.safetensors
// and base.json. A base ending in ".safetensors" or ".json" names the same
// pair; an existing directory (or a path ending in a separator) holds
// model.safetensors and model.json; a leading "~/" is the home directory.
func Paths(base string) (safetensorsPath, jsonPath string, err error) {
	if base == "" {
		return "", "", fmt.Errorf("checkpoint path is empty (give a base path such as ~/tutorial_1 or a directory)")
	}
	if strings.HasPrefix(base, "~/") || base == "~" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", fmt.Errorf("checkpoint path %s: %w", base, err)
		}
		base = filepath.Join(home, strings.TrimPrefix(base[1:], "/"))
	}
	if strings.HasSuffix(base, "/") || strings.HasSuffix(base, string(filepath.Separator)) {
		base = filepath.Join(base, "model")
	} else if fi, err := os.Stat(base); err == nil && fi.IsDir() {
		base = filepath.Join(base, "model")
	}
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".safetensors"), ".json")
	return base + ".safetensors", base + ".json", nil
}

// Export writes mg as a checkpoint, MASE's mg.export(fname): the
// parameters to <base>.safetensors (HuggingFace names, see SaveModel) and
// the graph to <base>.json (nodes with their arguments and metadata, the
// input names, the registry model and a SHA-256 of the parameters file),
// sealed with a checksum of its own bytes (seal.go).
// Both files are written to temporary files and synced before either is
// renamed into place. spec.Model may be empty when the model can be
// identified among models.Names; Export fails when the graph's module tree
// is not the one models.New builds, since Import could not rebuild it.
func Export(base string, mg *ir.MaseGraph, spec Spec) error {
	stPath, jsonPath, err := Paths(base)
	if err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("exporting MaseGraph to %s: %w", jsonPath, err) }
	if mg == nil || mg.Graph == nil || mg.Model == nil {
		return wrap(fmt.Errorf("the MaseGraph, its Graph and its Model must be set"))
	}
	if err := mg.Graph.Lint(); err != nil {
		return wrap(err)
	}
	name, replaced, err := identify(mg, spec)
	if err != nil {
		return wrap(err)
	}
	st, err := StateFile(mg.Model, map[string]string{"gomase.model": name})
	if err != nil {
		return wrap(err)
	}
	var buffers []string
	for _, b := range mg.Model.Buffers() {
		v, err := b.Variable.Value()
		if err == nil {
			st.Tensors[b.Name], err = fromGoMLX(v)
		}
		if err != nil {
			return wrap(fmt.Errorf("buffer %s: %w", b.Name, err))
		}
		buffers = append(buffers, b.Name)
	}
	hooks, err := mg.Model.HookRecords()
	if err != nil {
		return wrap(err)
	}
	stData, err := st.Encode()
	if err != nil {
		return wrap(err)
	}
	doc := graphDoc{
		Format: graphFormat, Version: graphVersion,
		Model:      modelDoc{Name: name, Seed: spec.Seed, Config: modelConfig(mg.Model)},
		Parameters: paramsDoc{File: filepath.Base(stPath), Bytes: len(stData), SHA256: sha256Hex(stData), Count: len(st.Tensors)},
		InputNames: mg.InputNames,
		Modules:    moduleTree(mg.Model),
		Replaced:   replaced,
		Frozen:     frozenParameters(mg.Model),
		Buffers:    buffers,
		Hooks:      hooks,
	}
	inGraph := func(n *ir.Node) error {
		if n.Graph() != mg.Graph {
			return fmt.Errorf("node reference %%%s points outside the graph", n.Name)
		}
		return nil
	}
	for _, n := range mg.Graph.Nodes() {
		nd, err := encodeNode(n, inGraph)
		if err != nil {
			return wrap(fmt.Errorf("node %s: %w", n.Name, err))
		}
		doc.Nodes = append(doc.Nodes, nd)
	}
	gm := mg.Graph.Meta
	doc.Meta = graphMeta{NodesIn: gm.NodesIn, NodesOut: gm.NodesOut}
	if gm.Hardware != nil {
		if doc.Meta.Hardware, err = encodeObject(gm.Hardware, nil); err != nil {
			return wrap(fmt.Errorf("graph metadata hardware%s", errSuffix(err)))
		}
	}
	js, err := layout(&doc)
	if err != nil {
		return wrap(err)
	}
	js = seal(js)
	if err := atomicfile.Write(atomicfile.File{Path: stPath, Data: stData}, atomicfile.File{Path: jsonPath, Data: js}); err != nil {
		return wrap(err)
	}
	return nil
}

// layout writes the graph file, unsealed: one top-level field per line,
// and one line per module and per node, so the file reads and diffs well.
func layout(doc *graphDoc) ([]byte, error) {
	var b bytes.Buffer
	field := func(key string, v any, last bool) error {
		js, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", key, err)
		}
		fmt.Fprintf(&b, " %q: %s", key, js)
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		return nil
	}
	list := func(key string, n int, item func(i int) any) error {
		fmt.Fprintf(&b, " %q: [", key)
		for i := 0; i < n; i++ {
			js, err := json.Marshal(item(i))
			if err != nil {
				return fmt.Errorf("encoding %s[%d]: %w", key, i, err)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n  ")
			b.Write(js)
		}
		b.WriteString("\n ],\n")
		return nil
	}
	b.WriteString("{\n")
	for _, f := range []struct {
		key string
		v   any
	}{{"format", doc.Format}, {"version", doc.Version}, {"model", doc.Model}, {"parameters", doc.Parameters}, {"input_names", doc.InputNames}} {
		if err := field(f.key, f.v, false); err != nil {
			return nil, err
		}
	}
	if err := list("modules", len(doc.Modules), func(i int) any { return doc.Modules[i] }); err != nil {
		return nil, err
	}
	if len(doc.Replaced) > 0 {
		if err := list("replaced", len(doc.Replaced), func(i int) any { return doc.Replaced[i] }); err != nil {
			return nil, err
		}
	}
	if len(doc.Frozen) > 0 {
		if err := field("frozen_parameters", doc.Frozen, false); err != nil {
			return nil, err
		}
	}
	if len(doc.Buffers) > 0 {
		if err := field("buffers", doc.Buffers, false); err != nil {
			return nil, err
		}
	}
	if len(doc.Hooks) > 0 {
		if err := list("hooks", len(doc.Hooks), func(i int) any { return doc.Hooks[i] }); err != nil {
			return nil, err
		}
	}
	if err := list("nodes", len(doc.Nodes), func(i int) any { return doc.Nodes[i] }); err != nil {
		return nil, err
	}
	if err := field("meta", doc.Meta, true); err != nil {
		return nil, err
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// encodeNode builds a node's JSON entry.
func encodeNode(n *ir.Node, inGraph func(*ir.Node) error) (nodeDoc, error) {
	nd := nodeDoc{Name: n.Name, Op: n.Op, Target: n.Target, Args: json.RawMessage("null"), Kwargs: json.RawMessage("null")}
	if args := n.Args(); args != nil {
		var b bytes.Buffer
		b.WriteByte('[')
		for i, a := range args {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendValue(&b, a, inGraph); err != nil {
				return nd, fmt.Errorf("args[%d]%s", i, errSuffix(err))
			}
		}
		b.WriteByte(']')
		nd.Args = b.Bytes()
	}
	// A nil and an empty kwargs map behave the same everywhere: both are null.
	if kw := n.Kwargs(); len(kw) > 0 {
		raw, err := encodeObject(kw, inGraph)
		if err != nil {
			return nd, fmt.Errorf("kwargs%s", errSuffix(err))
		}
		nd.Kwargs = raw
	}
	if n.Meta == nil {
		return nd, nil
	}
	md, err := encodeMeta(n.Meta)
	if err != nil {
		return nd, fmt.Errorf("metadata: %w", err)
	}
	nd.Meta = md
	return nd, nil
}

// encodeMeta builds a node's metadata entry.
func encodeMeta(m *ir.Meta) (*metaDoc, error) {
	md := &metaDoc{Common: m.Common, Hardware: m.Hardware}
	md.Hardware.Interface, md.Hardware.VerilogParam = nil, nil
	var err error
	if m.Hardware.Interface != nil {
		iface := make(map[string]any, len(m.Hardware.Interface))
		for k, v := range m.Hardware.Interface {
			iface[k] = v
		}
		if md.HardwareInterface, err = encodeObject(iface, nil); err != nil {
			return nil, fmt.Errorf("hardware interface%s", errSuffix(err))
		}
	}
	if m.Hardware.VerilogParam != nil {
		if md.HardwareVerilog, err = encodeObject(m.Hardware.VerilogParam, nil); err != nil {
			return nil, fmt.Errorf("hardware verilog_param%s", errSuffix(err))
		}
	}
	if md.Software, err = encodeObject(m.Software, nil); err != nil {
		return nil, fmt.Errorf("software%s", errSuffix(err))
	}
	vals := &valuesDoc{Args: storableValues(m.Common.Args), Results: storableValues(m.Common.Results)}
	if vals.Args != nil || vals.Results != nil {
		md.Values = vals
	}
	return md, nil
}

// storableValues encodes the recorded values of an argument map that the
// tagged encoding holds; tensors (and anything else it cannot hold) are
// left out, as MASE leaves out what it cannot pickle.
func storableValues(am *ir.ArgMap) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for _, k := range am.Keys() {
		v := am.Get(k).Value
		if v == nil {
			continue
		}
		raw, err := encodeValue(v, nil)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out[k] = raw
	}
	return out
}

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
// crossentropyloss_0) and returns it with its module tree.
func registryTree(name string, seed uint64, inputNames []string, config json.RawMessage) (*nn.Model, []moduleDoc, error) {
	m, err := models.NewFromConfig(name, config, seed)
	if err != nil {
		return nil, nil, err
	}
	if _, err := trace.Trace(m, inputNames); err != nil {
		return nil, nil, fmt.Errorf("tracing model %s with inputs %v: %w", name, inputNames, err)
	}
	return m, moduleTree(m), nil
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
	m, tree, err := registryTree(name, seed, mg.InputNames, config)
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

// ImportOptions changes what Import accepts; the zero value is Import's.
type ImportOptions struct {
	// AcceptEdited imports a graph file whose checksum does not match its
	// content, or that has lost its checksum line: a .json edited by hand
	// on purpose. Every validation still runs, the parameters file must
	// still match the SHA-256 the graph file records, and the report says
	// the checksum was not verified. Export the imported graph to seal it
	// again.
	AcceptEdited bool
}

// ImportReport says how a checkpoint was checked.
type ImportReport struct {
	// Version is the graph file's format version.
	Version int
	// Checksum is ChecksumVerified, ChecksumAbsent (a version 1 file,
	// written before checksums) or ChecksumIgnored (AcceptEdited, and the
	// checksum did not match or was missing).
	Checksum string
	// Notes are one-line remarks for the user (an old-format file, an
	// edited file imported).
	Notes []string
}

// The values of ImportReport.Checksum.
const (
	ChecksumVerified = "verified"
	ChecksumAbsent   = "absent"
	ChecksumIgnored  = "ignored"
)

// Import reads a checkpoint written by Export, MASE's
// MaseGraph.from_checkpoint(fname): it checks the graph file's checksum
// (a version 1 file has none) and the parameters file's SHA-256, validates
// the graph file whatever the checksum says (validate.go lists the
// checks), rebuilds the module tree with models.New and checks it against
// the exported one, loads every parameter (strictly: same names, dtypes
// and shapes), rebuilds the graph node by node with identical names,
// restores the metadata, and lints the result. Corrupt, edited, truncated
// or mismatched files give a one-line error naming the file.
func Import(base string) (*ir.MaseGraph, error) {
	mg, _, err := ImportWith(base, ImportOptions{})
	return mg, err
}

// ImportWith is Import with options, and a report of how the files were
// checked (for a version 1 file, a note that it has no checksum).
func ImportWith(base string, opts ImportOptions) (*ir.MaseGraph, *ImportReport, error) {
	mg, rep, err := importWith(base, opts)
	if err != nil {
		return nil, nil, singleLine(err)
	}
	return mg, rep, nil
}

func importWith(base string, opts ImportOptions) (*ir.MaseGraph, *ImportReport, error) {
	stPath, jsonPath, err := Paths(base)
	if err != nil {
		return nil, nil, err
	}
	raw, err := limits.ReadFile(jsonPath, limits.GraphJSON)
	if err != nil {
		return nil, nil, fmt.Errorf("importing MaseGraph: %w", err)
	}
	readParameters := func() ([]byte, error) { return limits.ReadFile(stPath, limits.Weights) }
	return importBytes(jsonPath, raw, stPath, readParameters, opts)
}

// importBytes imports a graph file already read, reading its parameters
// file only once the graph file is valid.
func importBytes(jsonPath string, raw []byte, stPath string, readParameters func() ([]byte, error), opts ImportOptions) (*ir.MaseGraph, *ImportReport, error) {
	doc, rep, err := readGraph(jsonPath, raw, opts)
	if err != nil {
		return nil, nil, err
	}
	stData, err := readParameters()
	if err != nil {
		return nil, nil, fmt.Errorf("importing MaseGraph: %w", err)
	}
	mg, err := importGraph(jsonPath, doc, stPath, stData)
	if err != nil {
		return nil, nil, err
	}
	return mg, rep, nil
}

// readGraph checks a graph file's checksum, decodes it and validates what
// can be validated before anything is built or the parameters are read.
func readGraph(jsonPath string, raw []byte, opts ImportOptions) (*graphDoc, *ImportReport, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("importing MaseGraph: graph file %s is corrupt or was edited: %s", jsonPath, fmt.Sprintf(format, args...))
	}
	digest, body, sealed := unseal(raw)
	matches := sealed && sha256Hex(body) == digest
	if sealed && !matches && !opts.AcceptEdited {
		return nil, nil, corrupt("its content does not match its checksum (sha256:%.12s…; recorded sha256:%.12s…) "+
			"(allowed: the file as Export wrote it; to import a hand-edited file, use checkpoint.ImportWith with AcceptEdited)", sha256Hex(body), digest)
	}
	doc, err := decodeDoc(raw)
	if err != nil {
		return nil, nil, corrupt("%v", err)
	}
	rep := &ImportReport{Version: doc.Version, Checksum: ChecksumVerified}
	switch {
	case doc.Version == 1 && doc.Checksum != "":
		return nil, nil, corrupt("a version 1 file has no checksum, this one has %q", safetensors.Abbreviate([]byte(doc.Checksum)))
	case doc.Version == 1:
		rep.Checksum = ChecksumAbsent
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s is a version 1 graph file, written before checksums: it was validated but cannot be checked for corruption; export it again to seal it", jsonPath))
	case !matches && !opts.AcceptEdited:
		return nil, nil, corrupt("its second line is not the checksum line Export writes (\"checksum\": \"sha256:<64 hex digits>\"); " +
			"to import a hand-edited file, use checkpoint.ImportWith with AcceptEdited")
	case !matches:
		rep.Checksum = ChecksumIgnored
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s does not match its checksum: imported as edited (AcceptEdited), after full validation", jsonPath))
	}
	if err := validateDoc(doc); err != nil {
		return nil, nil, fmt.Errorf("importing MaseGraph: graph file %s: %w", jsonPath, err)
	}
	return doc, rep, nil
}

// importGraph checks the parameters file against the graph file and
// rebuilds the MaseGraph.
func importGraph(jsonPath string, doc *graphDoc, stPath string, stData []byte) (*ir.MaseGraph, error) {
	if sum := sha256Hex(stData); sum != doc.Parameters.SHA256 {
		return nil, fmt.Errorf("importing MaseGraph: parameters file %s (%d bytes, sha256:%.12s…) is not the one %s records (%d bytes, sha256:%.12s…): "+
			"it is corrupt or was edited, or the two files come from different exports", stPath, len(stData), sum, jsonPath, doc.Parameters.Bytes, doc.Parameters.SHA256)
	}
	f, err := safetensors.Parse(stData)
	if err != nil {
		return nil, fmt.Errorf("importing MaseGraph: parameters file %s: %w", stPath, err)
	}
	if len(f.Tensors) != doc.Parameters.Count {
		return nil, fmt.Errorf("importing MaseGraph: parameters file %s holds %d tensors, %s records %d", stPath, len(f.Tensors), jsonPath, doc.Parameters.Count)
	}
	mg, err := rebuild(doc, f)
	if err != nil {
		return nil, fmt.Errorf("importing MaseGraph from %s: %w", jsonPath, err)
	}
	return mg, nil
}

// decodeDoc parses and checks the graph file's top level.
func decodeDoc(raw []byte) (*graphDoc, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var doc graphDoc
	if err := dec.Decode(&doc); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := lineCol(raw, se.Offset)
			return nil, fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, se)
		case errors.As(err, &te):
			line, col := lineCol(raw, te.Offset)
			return nil, fmt.Errorf("wrong JSON type at line %d, column %d: field %s: %v", line, col, te.Field, te)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("the JSON ends early (truncated file?)")
		}
		return nil, fmt.Errorf("invalid graph file: %s", oneLine(err.Error()))
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON object")
	}
	if doc.Format != graphFormat || doc.Version < 1 || doc.Version > graphVersion {
		return nil, fmt.Errorf("format %q version %d is not supported (allowed: %q versions 1 to %d)", safetensors.Abbreviate([]byte(doc.Format)), doc.Version, graphFormat, graphVersion)
	}
	return &doc, nil
}

// lineError is an error whose message was put on one line.
type lineError struct {
	msg string
	err error
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.err }

// singleLine returns err with its message on one line: names read from a
// file (a node's, a module's) may hold newlines.
func singleLine(err error) error {
	if msg := oneLine(err.Error()); msg != err.Error() {
		return &lineError{msg, err}
	}
	return err
}

// oneLine keeps an error message on one line (a JSON key or value quoted
// in it may hold control characters).
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, s)
}

// lineCol converts a byte offset into 1-based line and column numbers.
func lineCol(raw []byte, offset int64) (int, int) {
	offset = min(max(offset, 0), int64(len(raw)))
	before := raw[:offset]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// rebuild makes the model and graph of a decoded checkpoint.
func rebuild(doc *graphDoc, f *safetensors.File) (*ir.MaseGraph, error) {
	m, _, err := registryTree(doc.Model.Name, doc.Model.Seed, doc.InputNames, doc.Model.Config)
	if err != nil {
		return nil, err
	}
	if err := applyReplacements(m, doc.Replaced); err != nil {
		return nil, err
	}
	if d := treeDiff(doc.Modules, moduleTree(m)); d != "" {
		return nil, fmt.Errorf("models.New(%q) with the replaced modules no longer builds the exported module tree: %s", doc.Model.Name, d)
	}
	params := &safetensors.File{Tensors: maps.Clone(f.Tensors), Metadata: f.Metadata}
	for _, name := range doc.Buffers {
		t, ok := params.Tensors[name]
		if !ok {
			return nil, fmt.Errorf("buffer %s is listed but not in the parameters file", name)
		}
		delete(params.Tensors, name)
		value, err := toGoMLX(t)
		if err != nil {
			return nil, fmt.Errorf("buffer %s: %w", name, err)
		}
		if _, err := m.RegisterBuffer(name, value); err != nil {
			return nil, err
		}
	}
	if err := m.RestoreHooks(doc.Hooks); err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	loaded, err := LoadState(params, m, LoadOptions{NoAutoPrefix: true})
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	if len(loaded.Converted) > 0 {
		// Export writes every parameter in its own dtype: a conversion
		// means the file was not written by Export.
		name := sortedKeys(loaded.Converted)[0]
		return nil, fmt.Errorf("parameters: tensor %s is %s in the parameters file, not the parameter's own dtype (allowed: what Export writes, F32 for float parameters, I32 for int ones)",
			name, loaded.Converted[name])
	}
	for _, name := range doc.Frozen {
		v := m.Store.GetVariable(nn.StorePath(name))
		if v == nil {
			return nil, fmt.Errorf("frozen_parameters: the model has no parameter %q", name)
		}
		v.SetTrainable(false)
	}
	g := ir.New()
	lookup := func(name string) (*ir.Node, error) {
		if n := g.Node(name); n != nil {
			return n, nil
		}
		return nil, fmt.Errorf("node reference %q names no node defined before this one", name)
	}
	nodes := newNodeChecker(m, doc.InputNames)
	for i, nd := range doc.Nodes {
		n, err := addNode(g, nd, lookup)
		if err == nil {
			err = nodes.check(n)
		}
		if err != nil {
			return nil, fmt.Errorf("node %d (%s): %w", i, nd.Name, err)
		}
	}
	if err := nodes.finish(); err != nil {
		return nil, err
	}
	if err := g.Lint(); err != nil {
		return nil, err
	}
	for _, part := range []struct {
		what  string
		names []string
	}{{"meta.nodes_in", doc.Meta.NodesIn}, {"meta.nodes_out", doc.Meta.NodesOut}} {
		for _, name := range part.names {
			if g.Node(name) == nil {
				return nil, fmt.Errorf("%s names %q, which is not a node of the graph", part.what, name)
			}
		}
	}
	g.Meta = ir.GraphMeta{NodesIn: doc.Meta.NodesIn, NodesOut: doc.Meta.NodesOut}
	if g.Meta.Hardware, err = decodeObject(doc.Meta.Hardware, nil); err != nil {
		return nil, fmt.Errorf("graph metadata hardware%s", errSuffix(err))
	}
	return &ir.MaseGraph{Graph: g, Model: m, InputNames: doc.InputNames}, nil
}

// addNode recreates one node with its arguments and metadata.
func addNode(g *ir.Graph, nd nodeDoc, lookup func(string) (*ir.Node, error)) (*ir.Node, error) {
	if nd.Name == "" {
		return nil, fmt.Errorf("node has no name")
	}
	var args []any
	if len(nd.Args) > 0 && string(bytes.TrimSpace(nd.Args)) != "null" {
		var elems []json.RawMessage
		if err := json.Unmarshal(nd.Args, &elems); err != nil {
			return nil, fmt.Errorf("args must be a JSON array of values, got %s", safetensors.Abbreviate(nd.Args))
		}
		args = make([]any, len(elems))
		for i, e := range elems {
			v, err := decodeValue(e, lookup)
			if err != nil {
				return nil, fmt.Errorf("args[%d]%s", i, errSuffix(err))
			}
			args[i] = v
		}
	}
	kwargs, err := decodeObject(nd.Kwargs, lookup)
	if err != nil {
		return nil, fmt.Errorf("kwargs%s", errSuffix(err))
	}
	n, err := g.AddNode(nd.Op, nd.Name, nd.Target, args, kwargs)
	if err != nil {
		return nil, err
	}
	if n.Name != nd.Name {
		return nil, fmt.Errorf("the graph named the node %q, not %q (names must be unique identifiers: letters, digits, '_')", n.Name, nd.Name)
	}
	if nd.Meta == nil {
		return n, nil
	}
	meta, err := decodeMeta(nd.Meta)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	n.Meta = meta
	return n, nil
}

// errSuffix formats a nested decoding error after a path: "[0]: ..." stays
// attached, anything else gets ": ".
func errSuffix(err error) string {
	s := err.Error()
	if strings.HasPrefix(s, "[") {
		return s
	}
	return ": " + s
}

// decodeMeta rebuilds a node's ir.Meta.
func decodeMeta(md *metaDoc) (*ir.Meta, error) {
	m := &ir.Meta{Common: md.Common, Hardware: md.Hardware}
	var err error
	if m.Software, err = decodeObject(md.Software, nil); err != nil {
		return nil, fmt.Errorf("software%s", errSuffix(err))
	}
	iface, err := decodeObject(md.HardwareInterface, nil)
	if err != nil {
		return nil, fmt.Errorf("hardware interface%s", errSuffix(err))
	}
	if iface != nil {
		m.Hardware.Interface = make(map[string]map[string]any, len(iface))
		for k, v := range iface {
			inner, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("hardware interface[%q] must be a dict, got %T", k, v)
			}
			m.Hardware.Interface[k] = inner
		}
	}
	if m.Hardware.VerilogParam, err = decodeObject(md.HardwareVerilog, nil); err != nil {
		return nil, fmt.Errorf("hardware verilog_param%s", errSuffix(err))
	}
	if md.Values != nil {
		for _, part := range []struct {
			name string
			am   *ir.ArgMap
			vals map[string]json.RawMessage
		}{{"args", m.Common.Args, md.Values.Args}, {"results", m.Common.Results, md.Values.Results}} {
			for _, k := range sortedKeys(part.vals) {
				info := part.am.Get(k)
				if info == nil {
					return nil, fmt.Errorf("values.%s[%q] belongs to no entry of common.%s", part.name, k, part.name)
				}
				v, err := decodeValue(part.vals[k], nil)
				if err != nil {
					return nil, fmt.Errorf("values.%s[%q]%s", part.name, k, errSuffix(err))
				}
				info.Value = v
			}
		}
	}
	return m, nil
}

// toGoMLX converts a float32 or int32 safetensors tensor.
func toGoMLX(t *safetensors.Tensor) (*tensors.Tensor, error) {
	switch t.DType {
	case safetensors.F32:
		vals, err := t.Float32s()
		if err != nil {
			return nil, err
		}
		return tensors.FromFlatDataAndDimensions(vals, t.Shape...), nil
	case safetensors.I32:
		vals, err := t.Int64s()
		if err != nil {
			return nil, err
		}
		out := make([]int32, len(vals))
		for i, v := range vals {
			out[i] = int32(v)
		}
		return tensors.FromFlatDataAndDimensions(out, t.Shape...), nil
	}
	return nil, fmt.Errorf("dtype %s cannot be a buffer (allowed: F32, I32)", t.DType)
}

// modelConfig is the model's registry configuration, or nil.
func modelConfig(m *nn.Model) json.RawMessage {
	config, _ := models.ConfigOf(m)
	return config
}
