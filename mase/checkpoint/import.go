package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/safetensors"

	_ "github.com/gomase/gomase/mase/nn/packed"    // the packed modules' kinds, for DecodeModule
	_ "github.com/gomase/gomase/mase/nn/prune"     // the mask and pre-hook kinds, for RestoreHooks
	_ "github.com/gomase/gomase/mase/nn/quantized" // the quantised Linear's kind, for DecodeModule
)

// ImportOptions changes what Import accepts; the zero value is Import's.
type ImportOptions struct {
	// AcceptEdited imports a graph file whose checksum does not match its
	// content, or that has lost its checksum line: a .json edited by hand
	// on purpose. Every validation still runs, the parameters file must
	// still match the SHA-256 the graph file records, and the report says
	// the checksum was not verified. Export the imported graph to seal it
	// again.
	AcceptEdited bool
	// AcceptUnsealed imports a version 1 graph file, written before
	// checksums: nothing can tell whether it was edited or damaged, so
	// Import refuses it. Every validation still runs and the report says
	// the checksum is absent. Export the imported graph to seal it.
	AcceptUnsealed bool
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
	case doc.Version == 1 && !opts.AcceptUnsealed:
		return nil, nil, fmt.Errorf("importing MaseGraph: graph file %s is a version 1 file, written before checksums, so it cannot be verified "+
			"(allowed: a sealed version 2 file; to import this one unverified, use --accept-unsealed or checkpoint.ImportOptions{AcceptUnsealed: true}, then export it again to seal it)", jsonPath)
	case doc.Version == 1:
		rep.Checksum = ChecksumAbsent
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s is a version 1 graph file, written before checksums: it was validated but cannot be verified (imported with AcceptUnsealed); export it again to seal it", jsonPath))
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
	m, _, reference, err := registryTree(doc.Model.Name, doc.Model.Seed, doc.InputNames, doc.Model.Config)
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
	if err := checkCalls(reference, g, m); err != nil {
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
