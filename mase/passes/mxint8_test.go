package passes_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/internal/modeltest"
	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/packed"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/train"
)

const bertSeed = 7

// bertTiny returns a traced bert-tiny (input_ids only) whose Linear
// biases, zero at initialisation, are set to seeded random values so that
// packing them is tested too.
func bertTiny(t *testing.T) *ir.MaseGraph {
	t.Helper()
	m, err := models.NewBertTiny(bertSeed)
	if err != nil {
		t.Fatal(err)
	}
	modeltest.RandomLinearBiases(t, m, rand.New(rand.NewPCG(5, 6)))
	mg, err := mase.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mg
}

// inputIDs is a seeded batch of token ids [2, 12].
func inputIDs() map[string]*tensors.Tensor {
	rng := rand.New(rand.NewPCG(3, 4))
	ids := make([]int32, 24)
	for i := range ids {
		ids[i] = int32(rng.IntN(30522))
	}
	ids[0], ids[12] = 101, 101
	return map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, 2, 12)}
}

// run executes mg and returns its outputs as float32 slices.
func run(t *testing.T, mg *ir.MaseGraph) [][]float32 {
	t.Helper()
	outs, err := execute.Run(mg, inputIDs())
	if err != nil {
		t.Fatal(err)
	}
	var res [][]float32
	for _, o := range outs {
		v, err := tensors.CopyFlatData[float32](o)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, v)
	}
	return res
}

// dequantizedCopy returns a fresh bert-tiny whose Linear weights and biases
// (and embedding tables when embeddings is set) hold their MXINT8
// dequantised values.
func dequantizedCopy(t *testing.T, gs int, embeddings bool) *ir.MaseGraph {
	t.Helper()
	mg := bertTiny(t)
	for _, nm := range mg.Model.Modules() {
		var params []string
		switch nm.Module.(type) {
		case *nn.Linear:
			params = []string{"weight", "bias"}
		case *nn.Embedding:
			if embeddings {
				params = []string{"weight"}
			}
		}
		for _, param := range params {
			name := nn.Join(nm.Path, param)
			vals, shape, err := mg.Model.ParamValues(name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := mxint8.Pack(vals, gs)
			if err != nil {
				t.Fatal(err)
			}
			v := mg.Model.Store.GetVariable(nn.StorePath(name))
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(p.Float32s(), shape...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return mg
}

// closeOutputs checks two runs' outputs agree within a tiny tolerance.
func closeOutputs(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s: output %d has %d values, want %d", what, i, len(got[i]), len(want[i]))
		}
		for j := range got[i] {
			if d := math.Abs(float64(got[i][j] - want[i][j])); d > 1e-6*(1+math.Abs(float64(want[i][j]))) {
				t.Fatalf("%s: output %d[%d] = %v, want %v", what, i, j, got[i][j], want[i][j])
			}
		}
	}
}

// bertTinyLinearElements is Σ (in·out + out) over bert-tiny's 14 Linears.
const bertTinyLinearElements = 412290

// storedBytes is what a packed tensor of n values occupies as words.
func storedBytes(n, gs int) int64 {
	return int64(4 * ((n+3)/4 + (mxint8.NumGroups(n, gs)+3)/4))
}

// TestPackLinearsBertTiny packs bert-tiny's Linear layers (group size 32,
// MASE's experiment): the outputs equal those of bert-tiny with its Linear
// weights replaced by their dequantised values, the packed buffers hold
// exactly Pack's output, and the memory figures are exact.
func TestPackLinearsBertTiny(t *testing.T) {
	mg := bertTiny(t)
	mg, r, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	got := run(t, mg)
	closeOutputs(t, "linears packed", got, run(t, dequantizedCopy(t, 32, false)))
	// Not vacuous: the FP32 model's outputs differ.
	fp32 := run(t, bertTiny(t))
	if slices.Equal(got[0], fp32[0]) {
		t.Errorf("packed outputs equal the FP32 ones: %v", got[0])
	}

	if len(r.Layers) != 14 {
		t.Fatalf("%d packed layers, want 14:\n%s", len(r.Layers), r)
	}
	elements, stored := 0, int64(0)
	for _, l := range r.Layers {
		if l.From != "Linear" || l.To != "QLinearPacked" || l.FP32Bytes != 4*int64(l.Elements) {
			t.Errorf("row %+v", l)
		}
		elements += l.Elements
		stored += l.StoredBytes
	}
	if elements != bertTinyLinearElements {
		t.Errorf("packed %d elements, want %d", elements, bertTinyLinearElements)
	}
	// Rows: query is 128·128 + 128; the classifier 128·2 + 2 (a partial
	// bias group).
	q, cls := r.Layers[0], r.Layers[13]
	if q.Module != "bert.encoder.layer.0.attention.self.query" || q.PackedBytes != 16384+512+128+4 || q.StoredBytes != storedBytes(16384, 32)+storedBytes(128, 32) {
		t.Errorf("query row %+v", q)
	}
	if cls.Module != "classifier" || cls.Elements != 258 || cls.PackedBytes != 256+8+2+1 {
		t.Errorf("classifier row %+v", cls)
	}
	const params = 4386178
	if r.BytesBefore != 4*params {
		t.Errorf("bytes before %d, want %d", r.BytesBefore, 4*params)
	}
	if want := 4*int64(params-bertTinyLinearElements) + stored; r.BytesAfter != want {
		t.Errorf("bytes after %d, want %d", r.BytesAfter, want)
	}
	if r.Theoretical != 0.7421875 || math.Abs(r.Saving-(1-float64(r.BytesAfter)/float64(r.BytesBefore))) > 0 {
		t.Errorf("saving %v theoretical %v", r.Saving, r.Theoretical)
	}
	// The model: 14 packed.Linear, fewer parameters, non-trainable buffers
	// holding Pack's output.
	if n := mg.Model.NumParameters(""); n != params-bertTinyLinearElements {
		t.Errorf("%d parameters left, want %d", n, params-bertTinyLinearElements)
	}
	if !strings.Contains(mg.Model.String(), "(query): QLinearPacked(in_features=128, out_features=128, bias=True, group_size=32)") {
		t.Errorf("module tree:\n%s", mg.Model.String())
	}
	for _, b := range mg.Model.Buffers() {
		if b.Variable.Trainable {
			t.Errorf("buffer %s is trainable", b.Name)
		}
	}
	fresh := bertTiny(t)
	w, _, _ := fresh.Model.ParamValues("classifier.bias") // seeded, nonzero
	want, _ := mxint8.Pack(w, 32)
	back, err := packed.Read(mg.Model, "classifier", "bias")
	if err != nil || !slices.Equal(back.Mantissas(), want.Mantissas()) || !slices.Equal(back.Exponents(), want.Exponents()) {
		t.Errorf("packed.Read classifier.bias = %v, %v; want %v", back, err, want)
	}
	// A second call finds nothing to pack.
	_, r2, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: 32})
	if err != nil || len(r2.Layers) != 0 || r2.BytesBefore != r.BytesAfter || r2.BytesAfter != r.BytesAfter {
		t.Errorf("second PackLinears: %v %+v", err, r2)
	}
}

// TestPackLinearsWithEmbeddings packs bert-tiny's embeddings too: with
// group size 32 (rows own whole groups: only looked-up rows are
// dequantised) and 256 (a group spans two rows: the whole table is
// dequantised), against the dequantised-weights model; the saving comes
// close to the theoretical one.
func TestPackLinearsWithEmbeddings(t *testing.T) {
	for _, gs := range []int{32, 256} {
		mg, r, err := passes.PackLinears(bertTiny(t), passes.PackOptions{GroupSize: gs, Embeddings: true})
		if err != nil {
			t.Fatal(err)
		}
		closeOutputs(t, "linears and embeddings packed", run(t, mg), run(t, dequantizedCopy(t, gs, true)))
		if len(r.Layers) != 17 || r.Layers[0].Module != "bert.embeddings.word_embeddings" || r.Layers[0].To != "QEmbeddingPacked" {
			t.Fatalf("gs %d: layers %+v", gs, r.Layers[:2])
		}
		if n := mg.Model.NumParameters(""); n != 1280 { // the LayerNorms
			t.Errorf("gs %d: %d parameters left, want 1280", gs, n)
		}
		// Only LayerNorms and word padding keep the saving below the
		// theoretical one.
		if r.Saving >= r.Theoretical || r.Saving < r.Theoretical-0.001 {
			t.Errorf("gs %d: saving %v, theoretical %v", gs, r.Saving, r.Theoretical)
		}
	}
}

// TestPackLinearsExclude leaves the classifier FP32, as the lab does, and
// checks the metadata of a graph that has it: the packed nodes' weight and
// bias become mxint8 [8, 32], and common metadata can be recomputed on the
// packed graph.
func TestPackLinearsExclude(t *testing.T) {
	mg := bertTiny(t)
	if _, _, err := passes.InitMetadata(mg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: inputIDs()}); err != nil {
		t.Fatal(err)
	}
	mg, r, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: 32, Exclude: []string{"classifier"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range mg.Nodes() {
		if n.Target != "bert.pooler.dense" && n.Target != "classifier" {
			continue
		}
		w := n.Meta.Common.Args.Get("weight")
		if want := map[string]string{"bert.pooler.dense": "mxint8", "classifier": "float"}[n.Target]; w == nil || w.Type != want {
			t.Errorf("%s weight metadata %+v, want type %s", n.Target, w, want)
		} else if want == "mxint8" && !slices.Equal(w.Precision, []int{8, 32}) {
			t.Errorf("%s weight precision %v", n.Target, w.Precision)
		}
	}
	if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: inputIDs()}); err != nil {
		t.Errorf("metadata of the packed graph: %v", err)
	}
	if len(r.Layers) != 13 || r.Layers[12].Module != "bert.pooler.dense" {
		t.Errorf("%d layers packed, last %s", len(r.Layers), r.Layers[len(r.Layers)-1].Module)
	}
	if mod, _ := mg.Model.Module("classifier"); mod.TypeName() != "Linear" {
		t.Errorf("classifier became %s", mod.TypeName())
	}
}

// TestTrainAroundPackedLayers: a training step of a fully packed
// bert-tiny (traced with labels) runs — no gradient flows into the packed
// data — and moves the LayerNorms but not the packed buffers.
func TestTrainAroundPackedLayers(t *testing.T) {
	m, err := models.NewBertTiny(bertSeed)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, []string{"input_ids", "attention_mask", "labels"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: 32, Embeddings: true}); err != nil {
		t.Fatal(err)
	}
	before, _ := packed.Read(mg.Model, "bert.encoder.layer.0.attention.self.query", "weight")
	ln, _, _ := mg.Model.ParamValues("bert.embeddings.LayerNorm.weight")
	tr, err := train.New(mg, train.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]int32, 24)
	for i := range mask {
		mask[i] = 1
	}
	batch := train.Batch{"input_ids": inputIDs()["input_ids"], "attention_mask": tensors.FromFlatDataAndDimensions(mask, 2, 12),
		"labels": tensors.FromValue([]int32{1, 0})}
	loss, _, err := tr.Step(batch, 1e-2)
	if err != nil || math.IsNaN(loss) {
		t.Fatalf("step: loss %v, %v", loss, err)
	}
	after, _ := packed.Read(mg.Model, "bert.encoder.layer.0.attention.self.query", "weight")
	if !slices.Equal(before.Mantissas(), after.Mantissas()) || !slices.Equal(before.Exponents(), after.Exponents()) {
		t.Errorf("the packed weight changed in training")
	}
	if ln2, _, _ := mg.Model.ParamValues("bert.embeddings.LayerNorm.weight"); slices.Equal(ln, ln2) {
		t.Errorf("the LayerNorm did not train")
	}
}

// TestPackedCheckpointRoundTrip exports a packed bert-tiny as a MaseGraph
// checkpoint and imports it: the packed modules come back from their kinds
// and their buffers from the safetensors file, with the same outputs.
func TestPackedCheckpointRoundTrip(t *testing.T) {
	mg, _, err := passes.PackLinears(bertTiny(t), passes.PackOptions{GroupSize: 64, Embeddings: true})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "packed")
	if err := checkpoint.Export(base, mg, checkpoint.Spec{Model: "bert-tiny", Seed: bertSeed}); err != nil {
		t.Fatal(err)
	}
	back, err := checkpoint.Import(base)
	if err != nil {
		t.Fatal(err)
	}
	closeOutputs(t, "imported", run(t, back), run(t, mg))
}

// TestAcceptanceNBits is spec §9 item 33: packed.Linear for Linear(4096,
// 1024) at group size 32 stores 4,194,304 mantissas + 131,072 exponents
// for the weight and 1,024 + 32 for the bias: nbits = 8.25.
func TestAcceptanceNBits(t *testing.T) {
	l, err := packed.NewLinear(4096, 1024, true, 32)
	if err != nil {
		t.Fatal(err)
	}
	if b := l.PackedBytes(); b != 4194304+131072+1024+32 {
		t.Errorf("packed bytes %d", b)
	}
	if nb := l.NBits(); nb != 8.25 {
		t.Errorf("nbits %v, want 8.25", nb)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, 4096*1024)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.02)
	}
	pw, err := mxint8.Pack(w, 32)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := mxint8.Pack(w[:1024], 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(pw.Mantissas()) != 4194304 || len(pw.Exponents()) != 131072 || len(pb.Mantissas()) != 1024 || len(pb.Exponents()) != 32 {
		t.Errorf("weight %d+%d, bias %d+%d", len(pw.Mantissas()), len(pw.Exponents()), len(pb.Mantissas()), len(pb.Exponents()))
	}
	if nb := 8 * float64(pw.Bytes()+pb.Bytes()) / float64(4194304+1024); nb != 8.25 {
		t.Errorf("nbits from the packed tensors %v, want 8.25", nb)
	}
	if pw.BitsPerElement() != 8.25 {
		t.Errorf("weight bits per element %v", pw.BitsPerElement())
	}
}

// TestModuleKinds: both packed modules encode and decode by kind (as
// checkpoints do), and bad configurations are rejected with their reason.
func TestModuleKinds(t *testing.T) {
	for _, mod := range []nn.Module{
		&packed.Linear{InFeatures: 8, OutFeatures: 4, Bias: true, GroupSize: 16},
		&packed.Embedding{NumEmbeddings: 10, EmbeddingDim: 16, PaddingIdx: 0, GroupSize: 8},
	} {
		kind, cfg, err := nn.EncodeModule(mod)
		if err != nil {
			t.Fatal(err)
		}
		back, err := nn.DecodeModule(kind, cfg)
		if err != nil || back.ExtraRepr() != mod.ExtraRepr() || back.TypeName() != kind {
			t.Errorf("%s: %v %v", kind, back, err)
		}
	}
	for _, tc := range []struct {
		kind, cfg, want string
	}{
		{"QLinearPacked", `{"InFeatures":8,"OutFeatures":4,"Bias":true,"GroupSize":24}`, "group size 24 is not supported (allowed: 8, 16, 32, 64, 128, 256, 512)"},
		{"QLinearPacked", `{"InFeatures":0,"OutFeatures":4,"Bias":true,"GroupSize":32}`, "want in_features and out_features ≥ 1"},
		{"QEmbeddingPacked", `{"NumEmbeddings":4,"EmbeddingDim":8,"PaddingIdx":4,"GroupSize":8}`, "padding_idx 4 (allowed: -1 for none, or 0..3)"},
	} {
		_, err := nn.DecodeModule(tc.kind, json.RawMessage(tc.cfg))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.kind, tc.cfg, err, tc.want)
		}
	}
}

// TestPackErrorsAPI checks the transform's and the buffer helpers' errors.
func TestPackErrorsAPI(t *testing.T) {
	if _, _, err := passes.PackLinears(nil, passes.PackOptions{GroupSize: 32}); err == nil || !strings.Contains(err.Error(), "must be set") {
		t.Errorf("nil graph: %v", err)
	}
	mg := bertTiny(t)
	if _, _, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: 48}); err == nil || !strings.Contains(err.Error(), "group size 48 is not supported (allowed: 8, 16, 32, 64, 128, 256, 512)") {
		t.Errorf("group 48: %v", err)
	}
	// A non-finite weight leaves the model untouched.
	v := mg.Model.Store.GetVariable(nn.StorePath("classifier.weight"))
	vals, shape, _ := mg.Model.ParamValues("classifier.weight")
	vals[5] = float32(math.Inf(1))
	if err := v.SetValue(tensors.FromFlatDataAndDimensions(vals, shape...)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: 32}); err == nil || !strings.Contains(err.Error(), "pack classifier.weight: mxint8: value +Inf at index 5 is not finite") {
		t.Errorf("inf weight: %v", err)
	}
	if _, ok := mg.Model.Module("bert.pooler.dense"); !ok || mg.Model.NumParameters("") != 4386178 {
		t.Errorf("the model changed after a failed pack")
	}
	p, _ := mxint8.Pack(make([]float32, 10), 8)
	for _, tc := range []struct {
		path, param, want string
	}{
		{"nowhere", "weight", `the model has no module "nowhere"`},
		{"classifier", "weight", "module classifier is a Linear (allowed: QLinearPacked, QEmbeddingPacked)"},
	} {
		if err := packed.Set(mg.Model, tc.path, tc.param, p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("packed.Set(%s, %s): %v, want %q", tc.path, tc.param, err, tc.want)
		}
		if _, err := packed.Read(mg.Model, tc.path, tc.param); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("packed.Read(%s, %s): %v, want %q", tc.path, tc.param, err, tc.want)
		}
	}
	l, _ := packed.NewLinear(128, 2, true, 8)
	if err := mg.Model.ReplaceModule("classifier", l, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := packed.Set(mg.Model, "classifier", "gamma", p); err == nil || !strings.Contains(err.Error(), `QLinearPacked classifier has no packed parameter "gamma" (allowed: [bias weight])`) {
		t.Errorf("unknown param: %v", err)
	}
	if err := packed.Set(mg.Model, "classifier", "bias", p); err == nil || !strings.Contains(err.Error(), "packed tensor has 10 values in groups of 8 (allowed: 2 values in groups of 8)") {
		t.Errorf("wrong size: %v", err)
	}
	if _, err := packed.Read(mg.Model, "classifier", "bias"); err == nil || !strings.Contains(err.Error(), "has no buffer classifier.bias_mantissas") {
		t.Errorf("unset buffer: %v", err)
	}
	if _, err := execute.Run(mg, inputIDs()); err == nil || !strings.Contains(err.Error(), "packed parameters are set by passes.PackLinears or packed.Set") {
		t.Errorf("running with unset buffers: %v", err)
	}
}
