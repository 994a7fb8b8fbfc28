package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
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
// renamed into place; files already at those paths are replaced only when
// an Export wrote them (CheckOutput). spec.Model may be empty when the model can be
// identified among models.Names; Export fails when the graph's module tree
// is not the one models.New builds, since Import could not rebuild it.
func Export(base string, mg *ir.MaseGraph, spec Spec) error {
	stPath, jsonPath, err := Paths(base)
	if err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("exporting MaseGraph to %s: %w", jsonPath, err) }
	if err := CheckOutput(base); err != nil {
		return wrap(err)
	}
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
