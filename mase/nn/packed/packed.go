// Package packed holds the MXINT8-packed modules of Lab 4 (MASE's
// Linear and Embedding): weights stored as packed mantissas
// and exponents in the model's buffers and dequantised on every call.
package packed

import (
	"fmt"
	"slices"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/nn"
)

func init() {
	nn.RegisterModuleKind(LinearKind, func() nn.Module { return &Linear{} })
	nn.RegisterModuleKind(EmbeddingKind, func() nn.Module { return &Embedding{} })
}

// The packed modules' kinds in checkpoints (nn.ModuleKind).
const (
	LinearKind    = "QLinearPacked"
	EmbeddingKind = "QEmbeddingPacked"
)

// A packed parameter P ("weight", "bias") of a packed module lives in the
// model as two non-trainable buffers (Model.RegisterBuffer), so that
// optimisers never touch it and MaseGraph checkpoints save it:
//
//	<module>.<P>_mantissas  int32 [ceil(n/4)]          4 mantissas per word
//	<module>.<P>_exponents  int32 [ceil(groups/4)]     4 exponents per word
//
// Words are little-endian (byte k of a word is element 4i+k) and the last
// word is zero-padded; the checkpoint format holds float32 and int32
// tensors only, hence words rather than int8/uint8 tensors. Set
// writes them, Read reads them back.

// Buffer name suffixes of a packed parameter.
const (
	MantissasSuffix = "_mantissas"
	ExponentsSuffix = "_exponents"
)

// Module is a module whose parameters are packed buffers.
type Module interface {
	nn.Module
	// packedParams maps each packed parameter to its element count.
	PackedParams() map[string]int
	PackedGroupSize() int
}

// Linear is MASE's Linear: a Linear layer (y = x Wᵀ + b,
// W [out, in]) whose weight and bias are held packed as MXINT8 and
// dequantised on every call (to bfloat16, then to the input's dtype), as
// in the lab's forward F.linear(x, W.unpack(), b.unpack()). The packed
// values are buffers, not parameters (see Set): the layer does not
// train (other parameters around it can: no gradient flows into it).
// Unlike MASE's build_from_linear, out_features need not be a multiple of
// the group size (the last group may be partial).
type Linear struct {
	InFeatures  int  `json:"InFeatures"`
	OutFeatures int  `json:"OutFeatures"`
	Bias        bool `json:"Bias"`
	GroupSize   int  `json:"GroupSize"`
}

// NewLinear returns a packed Linear of in → out features; its
// packed weight and bias must then be set with Set (PackLinears does
// both).
func NewLinear(in, out int, bias bool, groupSize int) (*Linear, error) {
	l := &Linear{InFeatures: in, OutFeatures: out, Bias: bias, GroupSize: groupSize}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return l, nil
}

// Validate implements Validator: features ≥ 1 and a supported group
// size.
func (l *Linear) Validate() error {
	if l.InFeatures < 1 || l.OutFeatures < 1 {
		return fmt.Errorf("QLinearPacked %d → %d: want in_features and out_features ≥ 1", l.InFeatures, l.OutFeatures)
	}
	if err := mxint8.CheckGroupSize(l.GroupSize); err != nil {
		return fmt.Errorf("QLinearPacked: %w", err)
	}
	return nil
}

// TypeName implements Module.
func (l *Linear) TypeName() string { return LinearKind }

// ModuleKind implements nn.Kinded.
func (l *Linear) ModuleKind() string { return LinearKind }

// ExtraRepr implements Module.
func (l *Linear) ExtraRepr() string {
	return fmt.Sprintf("in_features=%d, out_features=%d, bias=%s, group_size=%d", l.InFeatures, l.OutFeatures, nn.PyBool(l.Bias), l.GroupSize)
}

// Children implements Module: a leaf has none.
func (l *Linear) Children() []nn.Named { return nil }

// Params implements Module: none; the packed weight and bias are
// buffers.
func (l *Linear) Params() []nn.ParamSpec { return nil }

// MaseOp declares the operator for metadata passes: linear.
func (l *Linear) MaseOp() (string, string) { return "module_related_func", "linear" }

func (l *Linear) PackedParams() map[string]int {
	p := map[string]int{"weight": l.InFeatures * l.OutFeatures}
	if l.Bias {
		p["bias"] = l.OutFeatures
	}
	return p
}

func (l *Linear) PackedGroupSize() int { return l.GroupSize }

// PackedBytes is the storage of the packed weight and bias (MASE's Σ
// nbytes: mantissas plus exponents).
func (l *Linear) PackedBytes() int {
	b := mxint8.StorageBytes(l.InFeatures*l.OutFeatures, l.GroupSize)
	if l.Bias {
		b += mxint8.StorageBytes(l.OutFeatures, l.GroupSize)
	}
	return b
}

// NBits is MASE's nbits: 8·PackedBytes / (in·out + out) (8.25 for
// Linear(4096, 1024) at group size 32). Without a bias the denominator is
// in·out.
func (l *Linear) NBits() float64 {
	n := l.InFeatures * l.OutFeatures
	if l.Bias {
		n += l.OutFeatures
	}
	return 8 * float64(l.PackedBytes()) / float64(n)
}

// Forward implements Leaf: linear(x, dequant(W), dequant(b)).
func (l *Linear) Forward(c *nn.Call, args []any, _ map[string]any) (any, error) {
	x, err := nodeArg("QLinearPacked", c.Path, args)
	if err != nil {
		return nil, err
	}
	if d := x.Shape().Dimensions; len(d) == 0 || d[len(d)-1] != l.InFeatures || !x.DType().IsFloat() {
		return nil, fmt.Errorf("QLinearPacked %s: input %s (allowed: a float tensor whose last axis is %d)", c.Path, x.Shape(), l.InFeatures)
	}
	n, gs := l.InFeatures*l.OutFeatures, l.GroupSize
	m, e, err := unpackParam(c, "weight", n, gs)
	if err != nil {
		return nil, err
	}
	w, err := mxint8.DequantizeGraph(m, e, gs)
	if err != nil {
		return nil, fmt.Errorf("module %s, weight: %w", c.Path, err)
	}
	w = graph.Reshape(graph.ConvertDType(w, x.DType()), l.OutFeatures, l.InFeatures)
	var b *graph.Node
	if l.Bias {
		if b, err = dequantParam(c, "bias", l.OutFeatures, gs); err != nil {
			return nil, err
		}
		b = graph.ConvertDType(b, x.DType())
	}
	if !backend.Kernels(x.Graph().Backend()).MXInt8 {
		return nn.LinearBiasOp(x, w, b), nil
	}
	// The backend's MXINT8 kernel dequantises the weight inside the matmul's
	// graph; the GoMLX form stays as the fallback and for gradients.
	m = graph.Reshape(m, l.OutFeatures, l.InFeatures)
	q := &graph.Quantization{Scheme: backend.QuantMXInt8, Scale: e, BlockAxis: 1, BlockSize: gs}
	y, _ := graph.InternalFusedOpCaller(
		func() *graph.Node { return graph.BackendFusedQuantizedDense(x, m, b, q, compute.ActivationNone) },
		func() *graph.Node { return nn.LinearBiasOp(x, w, b) },
		true)
	return y, nil
}

// Embedding is an Embedding whose [num_embeddings, embedding_dim]
// table is held packed as MXINT8 (row-major, groups of GroupSize
// consecutive values) and dequantised on every call. When the group size
// divides embedding_dim, each row owns whole groups and only the looked-up
// rows are dequantised; otherwise the whole table is dequantised, then
// gathered. The output is float32.
type Embedding struct {
	NumEmbeddings int `json:"NumEmbeddings"`
	EmbeddingDim  int `json:"EmbeddingDim"`
	// PaddingIdx is kept for the printout (-1: none); the padding row is
	// whatever was packed (zeros for a HuggingFace model).
	PaddingIdx int `json:"PaddingIdx"`
	GroupSize  int `json:"GroupSize"`
}

// NewEmbedding returns a packed Embedding; its table must then be
// set with Set (PackLinears with Embeddings does both).
func NewEmbedding(num, dim, paddingIdx, groupSize int) (*Embedding, error) {
	e := &Embedding{NumEmbeddings: num, EmbeddingDim: dim, PaddingIdx: paddingIdx, GroupSize: groupSize}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}

// Validate implements Validator.
func (e *Embedding) Validate() error {
	if e.NumEmbeddings < 1 || e.EmbeddingDim < 1 {
		return fmt.Errorf("QEmbeddingPacked %d × %d: want num_embeddings and embedding_dim ≥ 1", e.NumEmbeddings, e.EmbeddingDim)
	}
	if e.PaddingIdx < -1 || e.PaddingIdx >= e.NumEmbeddings {
		return fmt.Errorf("QEmbeddingPacked: padding_idx %d (allowed: -1 for none, or 0..%d)", e.PaddingIdx, e.NumEmbeddings-1)
	}
	if err := mxint8.CheckGroupSize(e.GroupSize); err != nil {
		return fmt.Errorf("QEmbeddingPacked: %w", err)
	}
	return nil
}

// TypeName implements Module.
func (e *Embedding) TypeName() string { return EmbeddingKind }

// ModuleKind implements nn.Kinded.
func (e *Embedding) ModuleKind() string { return EmbeddingKind }

// ExtraRepr implements Module.
func (e *Embedding) ExtraRepr() string {
	s := fmt.Sprintf("%d, %d", e.NumEmbeddings, e.EmbeddingDim)
	if e.PaddingIdx >= 0 {
		s += fmt.Sprintf(", padding_idx=%d", e.PaddingIdx)
	}
	return s + fmt.Sprintf(", group_size=%d", e.GroupSize)
}

// Children implements Module: a leaf has none.
func (e *Embedding) Children() []nn.Named { return nil }

// Params implements Module: none; the packed table is a buffer.
func (e *Embedding) Params() []nn.ParamSpec { return nil }

// MaseOp declares the operator for metadata passes: embedding.
func (e *Embedding) MaseOp() (string, string) { return "implicit_func", "embedding" }

func (e *Embedding) PackedParams() map[string]int {
	return map[string]int{"weight": e.NumEmbeddings * e.EmbeddingDim}
}

func (e *Embedding) PackedGroupSize() int { return e.GroupSize }

// Forward implements Leaf: integer ids [...] → float32 [..., dim].
func (e *Embedding) Forward(c *nn.Call, args []any, _ map[string]any) (any, error) {
	ids, err := nodeArg("QEmbeddingPacked", c.Path, args)
	if err != nil {
		return nil, err
	}
	if !ids.DType().IsInt() {
		return nil, fmt.Errorf("QEmbeddingPacked %s: ids are %s (allowed: an integer type)", c.Path, ids.DType())
	}
	v, d, gs := e.NumEmbeddings, e.EmbeddingDim, e.GroupSize
	n := v * d
	if d%gs != 0 {
		table, err := dequantParam(c, "weight", n, gs)
		if err != nil {
			return nil, err
		}
		table = graph.Reshape(graph.ConvertDType(table, dtypes.Float32), v, d)
		return graph.Gather(table, graph.ExpandAxes(ids, -1)), nil
	}
	// Rows own whole groups (and whole words: d is a multiple of 8).
	mw, ew, err := packedBuffers(c, "weight", n, gs)
	if err != nil {
		return nil, err
	}
	idx := graph.ExpandAxes(ids, -1)
	if backend.Kernels(ids.Graph().Backend()).MXInt8 {
		// The backend's MXINT8 kernel dequantises the looked-up rows.
		m := graph.Reshape(mxint8.UnwordsGraph(mw, dtypes.Int8, n), v, d)
		ex := mxint8.UnwordsGraph(ew, dtypes.Uint8, n/gs)
		q := &graph.Quantization{Scheme: backend.QuantMXInt8, Scale: ex, BlockAxis: 1, BlockSize: gs}
		y, _ := graph.InternalFusedOpCaller(
			func() *graph.Node { return graph.BackendQuantizedEmbeddingLookup(m, idx, q) },
			func() *graph.Node { return must(e.lookupGraph(mw, ew, ids, idx)) },
			true)
		return graph.ConvertDType(y, dtypes.Float32), nil
	}
	y, err := e.lookupGraph(mw, ew, ids, idx)
	if err != nil {
		return nil, fmt.Errorf("QEmbeddingPacked %s: %w", c.Path, err)
	}
	return y, nil
}

// lookupGraph gathers the packed rows of ids (idx: ids with a last axis of
// 1) and dequantises them with GoMLX ops.
func (e *Embedding) lookupGraph(mw, ew, ids, idx *graph.Node) (*graph.Node, error) {
	v, d, gs := e.NumEmbeddings, e.EmbeddingDim, e.GroupSize
	n := v * d
	k := ids.Shape().Size()
	m := graph.Gather(graph.Reshape(mw, v, d/4), idx) // [..., d/4] words
	m = graph.Reshape(graph.Bitcast(m, dtypes.Int8), k*d)
	ex := graph.Reshape(mxint8.UnwordsGraph(ew, dtypes.Uint8, n/gs), v, d/gs)
	ex = graph.Reshape(graph.Gather(ex, idx), k*d/gs)
	y, err := mxint8.DequantizeGraph(m, ex, gs)
	if err != nil {
		return nil, err
	}
	out := append(slices.Clone(ids.Shape().Dimensions), d)
	return graph.Reshape(graph.ConvertDType(y, dtypes.Float32), out...), nil
}

// nodeArg returns the first argument as a graph node.
func nodeArg(kind, path string, args []any) (*graph.Node, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("%s %s: want one tensor argument, got none", kind, path)
	}
	x, ok := args[0].(*graph.Node)
	if !ok {
		return nil, fmt.Errorf("%s %s: argument 0 is %T (allowed: a tensor)", kind, path, args[0])
	}
	return x, nil
}

// packedBuffers returns the word buffers of packed parameter param of n
// values, checking their shapes.
func packedBuffers(c *nn.Call, param string, n, gs int) (mw, ew *graph.Node, err error) {
	for _, b := range []struct {
		suffix string
		words  int
		node   **graph.Node
	}{{MantissasSuffix, (n + 3) / 4, &mw}, {ExponentsSuffix, (mxint8.NumGroups(n, gs) + 3) / 4, &ew}} {
		node, err := c.RawParam(param + b.suffix)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (packed parameters are set by passes.PackLinears or packed.Set)", err)
		}
		if s := node.Shape(); s.DType != dtypes.Int32 || s.Rank() != 1 || s.Dimensions[0] != b.words {
			return nil, nil, fmt.Errorf("module %s: buffer %s%s is %s (allowed: int32 [%d])", c.Path, param, b.suffix, s, b.words)
		}
		*b.node = node
	}
	return mw, ew, nil
}

// unpackParam returns the int8 mantissas [n] and uint8 exponents of
// packed parameter param (n values in groups of gs).
func unpackParam(c *nn.Call, param string, n, gs int) (m, e *graph.Node, err error) {
	mw, ew, err := packedBuffers(c, param, n, gs)
	if err != nil {
		return nil, nil, err
	}
	return mxint8.UnwordsGraph(mw, dtypes.Int8, n), mxint8.UnwordsGraph(ew, dtypes.Uint8, mxint8.NumGroups(n, gs)), nil
}

// dequantParam returns packed parameter param (n values) dequantised to
// bfloat16 [n].
func dequantParam(c *nn.Call, param string, n, gs int) (*graph.Node, error) {
	m, e, err := unpackParam(c, param, n, gs)
	if err != nil {
		return nil, err
	}
	y, err := mxint8.DequantizeGraph(m, e, gs)
	if err != nil {
		return nil, fmt.Errorf("module %s, %s: %w", c.Path, param, err)
	}
	return y, nil
}

// Set stores p as packed parameter param ("weight", "bias") of the
// Linear or Embedding at path: p must have the parameter's
// element count and the module's group size. Existing buffers are
// overwritten.
func Set(m *nn.Model, path, param string, p *mxint8.Packed) error {
	pm, n, err := packedParam(m, path, param)
	if err != nil {
		return err
	}
	if p == nil || p.Len() != n || p.GroupSize() != pm.PackedGroupSize() {
		got := "nil"
		if p != nil {
			got = fmt.Sprintf("%d values in groups of %d", p.Len(), p.GroupSize())
		}
		return fmt.Errorf("mxint8: set %s.%s: packed tensor has %s (allowed: %d values in groups of %d)", path, param, got, n, pm.PackedGroupSize())
	}
	for _, b := range []struct {
		suffix string
		words  []int32
	}{{MantissasSuffix, mxint8.Words(p.Mantissas())}, {ExponentsSuffix, mxint8.Words(p.Exponents())}} {
		name := nn.Join(path, param+b.suffix)
		t := tensors.FromFlatDataAndDimensions(b.words, len(b.words))
		if v, ok := m.Buffer(name); ok {
			if err := v.SetValue(t); err != nil {
				return fmt.Errorf("mxint8: set %s: %w", name, err)
			}
			continue
		}
		if _, err := m.RegisterBuffer(name, t); err != nil {
			return fmt.Errorf("mxint8: %w", err)
		}
	}
	return nil
}

// Read returns packed parameter param of the packed module at path,
// as Set stored it.
func Read(m *nn.Model, path, param string) (*mxint8.Packed, error) {
	pm, n, err := packedParam(m, path, param)
	if err != nil {
		return nil, err
	}
	gs := pm.PackedGroupSize()
	var ws [2][]int32
	for i, suffix := range []string{MantissasSuffix, ExponentsSuffix} {
		name := nn.Join(path, param+suffix)
		v, ok := m.Buffer(name)
		if !ok {
			return nil, fmt.Errorf("mxint8: %s has no buffer %s (packed parameters are set by passes.PackLinears or packed.Set)", path, name)
		}
		t, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("mxint8: %s: %w", name, err)
		}
		if t.DType() != dtypes.Int32 {
			return nil, fmt.Errorf("mxint8: buffer %s is %s (allowed: int32)", name, t.DType())
		}
		if ws[i], err = tensors.CopyFlatData[int32](t); err != nil {
			return nil, fmt.Errorf("mxint8: %s: %w", name, err)
		}
	}
	groups := mxint8.NumGroups(n, gs)
	if len(ws[0]) != (n+3)/4 || len(ws[1]) != (groups+3)/4 {
		return nil, fmt.Errorf("mxint8: %s.%s has %d mantissa and %d exponent words (allowed: %d and %d)", path, param, len(ws[0]), len(ws[1]), (n+3)/4, (groups+3)/4)
	}
	return mxint8.NewPacked(mxint8.Unwords[int8](ws[0], n), mxint8.Unwords[uint8](ws[1], groups), gs)
}

// packedParam looks up a packed module and the element count of its
// parameter param.
func packedParam(m *nn.Model, path, param string) (Module, int, error) {
	mod, ok := m.Module(path)
	if !ok {
		return nil, 0, fmt.Errorf("mxint8: the model has no module %q", path)
	}
	pm, ok := mod.(Module)
	if !ok {
		return nil, 0, fmt.Errorf("mxint8: module %s is a %s (allowed: %s, %s)", path, mod.TypeName(), LinearKind, EmbeddingKind)
	}
	n, ok := pm.PackedParams()[param]
	if !ok {
		names := make([]string, 0, 2)
		for k := range pm.PackedParams() {
			names = append(names, k)
		}
		slices.Sort(names)
		return nil, 0, fmt.Errorf("mxint8: %s %s has no packed parameter %q (allowed: %v)", mod.TypeName(), path, param, names)
	}
	return pm, n, nil
}

// must returns x, or panics with err inside a graph being built (where
// GoMLX turns the panic into the build's error).
func must(x *graph.Node, err error) *graph.Node {
	if err != nil {
		panic(err)
	}
	return x
}
