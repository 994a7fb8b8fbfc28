package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/packed"
)

// PackOptions configures PackLinears.
type PackOptions struct {
	// GroupSize is the MXINT8 group size, one of GroupSizes (the lab uses
	// 32).
	GroupSize int
	// Embeddings also packs every nn.Embedding table (MASE leaves them
	// FP32).
	Embeddings bool
	// Exclude leaves FP32 every module whose dotted path contains one of
	// these strings (the lab's experiment skips names containing
	// "classifier").
	Exclude []string
}

// PackedLayer is one packed module of a PackReport.
type PackedLayer struct {
	Module string `json:"module"` // dotted path
	From   string `json:"from"`   // Linear, Embedding
	To     string `json:"to"`     // QLinearPacked, QEmbeddingPacked
	// Elements counts the packed values (weight and bias).
	Elements int `json:"elements"`
	// FP32Bytes is 4·Elements, the float32 storage replaced.
	FP32Bytes int64 `json:"fp32_bytes"`
	// PackedBytes is the MXINT8 storage: mantissas plus exponents (MASE's
	// Σ nbytes).
	PackedBytes int64 `json:"packed_bytes"`
	// StoredBytes is what the model store holds: the int32 word buffers
	// (PackedBytes rounded up to whole words per buffer).
	StoredBytes int64 `json:"stored_bytes"`
	// Bits is 8·PackedBytes/Elements (MASE's nbits).
	Bits float64 `json:"bits"`
}

// PackReport is PackLinears' account of the model's parameter memory.
type PackReport struct {
	GroupSize  int  `json:"group_size"`
	Embeddings bool `json:"embeddings"`
	// BytesBefore and BytesAfter are ModelBytes before and after: float
	// parameters at their dtype's size plus packed buffers.
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
	// Saving is the measured 1 − BytesAfter/BytesBefore.
	Saving float64 `json:"saving"`
	// Theoretical is mxint8.TheoreticalSaving(GroupSize): 0.7421875 at 32.
	Theoretical float64 `json:"theoretical"`
	// Layers lists the modules packed by this call, in model order.
	Layers []PackedLayer `json:"layers"`
}

// String formats the report as a table: one row per packed module, then
// the totals and the saving against the theoretical one.
func (r PackReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-48s %-10s %12s %12s %12s %6s\n", "module", "from", "elements", "fp32 B", "packed B", "bits")
	for _, l := range r.Layers {
		fmt.Fprintf(&b, "%-48s %-10s %12d %12d %12d %6.3f\n", l.Module, l.From, l.Elements, l.FP32Bytes, l.PackedBytes, l.Bits)
	}
	fmt.Fprintf(&b, "parameter bytes: %d before, %d after (group size %d, embeddings packed: %v)\n", r.BytesBefore, r.BytesAfter, r.GroupSize, r.Embeddings)
	fmt.Fprintf(&b, "saving: %.2f%% measured vs %.5f%% theoretical\n", 100*r.Saving, 100*r.Theoretical)
	return b.String()
}

// ModelBytes is the memory of a model's parameters: every parameter at its
// dtype's size, plus the packed buffers of its QLinearPacked and
// QEmbeddingPacked modules (other buffers, such as pruning masks, are not
// parameters and are left out).
func ModelBytes(m *nn.Model) (int64, error) {
	var total int64
	for _, p := range m.Parameters() {
		total += int64(p.Variable.Shape().Size() * p.Variable.DType().Size())
	}
	for _, nm := range m.Modules() {
		pm, ok := nm.Module.(packed.Module)
		if !ok {
			continue
		}
		for param := range pm.PackedParams() {
			for _, suffix := range []string{packed.MantissasSuffix, packed.ExponentsSuffix} {
				name := nn.Join(nm.Path, param+suffix)
				v, ok := m.Buffer(name)
				if !ok {
					return 0, fmt.Errorf("mxint8: %s %s has no buffer %s", pm.TypeName(), nm.Path, name)
				}
				total += int64(v.Shape().Size() * v.DType().Size())
			}
		}
	}
	return total, nil
}

// packJob is one module to replace, with its packed parameters.
type packJob struct {
	path   string
	from   string
	module packed.Module
	params map[string]*mxint8.Packed
	order  []string
}

// PackLinears is the lab's QLinearPacked transform: every nn.Linear of the
// model (except those opts.Exclude names) becomes a QLinearPacked holding its weight and bias packed as
// MXINT8 with opts.GroupSize (both packed, as build_from_linear does), and
// with opts.Embeddings every nn.Embedding becomes a QEmbeddingPacked. The
// packed modules dequantise on every call, so the graph computes with the
// dequantised weights. Other modules (LayerNorms, already quantised or
// LoRA Linears) are left as they are.
//
// Everything is packed before the model changes, so an error (a
// non-finite weight, a bad group size) leaves it untouched. The calling
// nodes' metadata, when present, records weight and bias as type
// "mxint8", precision [8, group_size]. The MaseGraph is modified in place
// and returned.
func PackLinears(mg *ir.MaseGraph, opts PackOptions) (*ir.MaseGraph, PackReport, error) {
	if mg == nil || mg.Model == nil || mg.Graph == nil {
		return nil, PackReport{}, fmt.Errorf("pack linears: the MaseGraph, its Graph and its Model must be set")
	}
	if err := mxint8.CheckGroupSize(opts.GroupSize); err != nil {
		return nil, PackReport{}, fmt.Errorf("pack linears: %w", err)
	}
	gs := opts.GroupSize
	before, err := ModelBytes(mg.Model)
	if err != nil {
		return nil, PackReport{}, err
	}
	var jobs []packJob
	for _, nm := range mg.Model.Modules() {
		if slices.ContainsFunc(opts.Exclude, func(x string) bool { return strings.Contains(nm.Path, x) }) {
			continue
		}
		var job packJob
		switch mod := nm.Module.(type) {
		case *nn.Linear:
			q, err := packed.NewLinear(mod.InFeatures, mod.OutFeatures, mod.Bias, gs)
			if err != nil {
				return nil, PackReport{}, fmt.Errorf("mxint8: pack %s: %w", nm.Path, err)
			}
			job = packJob{path: nm.Path, from: "Linear", module: q, order: []string{"weight"}}
			if mod.Bias {
				job.order = append(job.order, "bias")
			}
		case *nn.Embedding:
			if !opts.Embeddings {
				continue
			}
			q, err := packed.NewEmbedding(mod.NumEmbeddings, mod.EmbeddingDim, mod.PaddingIdx, gs)
			if err != nil {
				return nil, PackReport{}, fmt.Errorf("mxint8: pack %s: %w", nm.Path, err)
			}
			job = packJob{path: nm.Path, from: "Embedding", module: q, order: []string{"weight"}}
		default:
			continue
		}
		job.params = map[string]*mxint8.Packed{}
		for _, param := range job.order {
			vals, _, err := mg.Model.ParamValues(nn.Join(nm.Path, param))
			if err != nil {
				return nil, PackReport{}, fmt.Errorf("mxint8: pack %s: %w", nm.Path, err)
			}
			if job.params[param], err = mxint8.Pack(vals, gs); err != nil {
				return nil, PackReport{}, fmt.Errorf("mxint8: pack %s.%s: %w", nm.Path, param, err)
			}
		}
		jobs = append(jobs, job)
	}
	report := PackReport{GroupSize: gs, Embeddings: opts.Embeddings, BytesBefore: before, Theoretical: mxint8.TheoreticalSaving(gs)}
	for _, j := range jobs {
		if err := mg.Model.ReplaceModule(j.path, j.module, nil, 0); err != nil {
			return nil, PackReport{}, fmt.Errorf("mxint8: pack %s: %w", j.path, err)
		}
		row := PackedLayer{Module: j.path, From: j.from, To: j.module.TypeName()}
		for _, param := range j.order {
			p := j.params[param]
			if err := packed.Set(mg.Model, j.path, param, p); err != nil {
				return nil, PackReport{}, err
			}
			row.Elements += p.Len()
			row.PackedBytes += int64(p.Bytes())
			row.StoredBytes += int64(4 * ((p.Len()+3)/4 + (p.NumGroups()+3)/4))
		}
		row.FP32Bytes = 4 * int64(row.Elements)
		row.Bits = 8 * float64(row.PackedBytes) / float64(row.Elements)
		report.Layers = append(report.Layers, row)
		setPackedMeta(mg.Graph, j.path, gs)
	}
	if report.BytesAfter, err = ModelBytes(mg.Model); err != nil {
		return nil, PackReport{}, err
	}
	report.Saving = 1 - float64(report.BytesAfter)/float64(report.BytesBefore)
	return mg, report, nil
}

// setPackedMeta marks the weight and bias of the nodes calling path as
// MXINT8 in their common metadata.
func setPackedMeta(g *ir.Graph, path string, gs int) {
	for _, n := range g.Nodes() {
		if n.Op != ir.CallModule || n.Target != path || n.Meta == nil || n.Meta.Common.Args == nil {
			continue
		}
		for _, name := range []string{"weight", "bias"} {
			if a := n.Meta.Common.Args.Get(name); a != nil {
				a.Type, a.Precision = "mxint8", []int{8, gs}
			}
		}
	}
}
