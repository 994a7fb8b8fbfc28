package labsetup

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/tokenizer"
)

// LargeBertConfig is a BERT-base-sized configuration (12 layers, hidden
// 768, 12 heads, intermediate 3072) with bert-tiny's vocabulary, position
// and label settings: the "larger BERT" of the memory report.
func LargeBertConfig() models.BertConfig {
	c := models.BertTinyConfig()
	c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize = 768, 12, 12, 3072
	return c
}

// MemoryFigures is the memory report of one BERT configuration, packed
// without and with its embeddings.
type MemoryFigures struct {
	Name       string            `json:"name"`
	Config     models.BertConfig `json:"config"`
	GroupSize  int               `json:"group_size"`
	Parameters int               `json:"parameters"` // scalar parameters of the FP32 model
	// LinearsOnly packs the Linear layers (MASE's experiment);
	// WithEmbeddings packs the embedding tables too.
	LinearsOnly    passes.PackReport `json:"linears_only"`
	WithEmbeddings passes.PackReport `json:"with_embeddings"`
}

// MXINT8MemoryReport builds the BERT of cfg with random weights (seed), traces
// it, and runs passes.PackLinears on it twice — Linear layers only, then on a
// fresh copy Linear layers and embeddings — returning both reports.
func MXINT8MemoryReport(name string, cfg models.BertConfig, seed uint64, groupSize int) (*MemoryFigures, error) {
	f := &MemoryFigures{Name: name, Config: cfg, GroupSize: groupSize}
	for _, emb := range []bool{false, true} {
		m, err := models.NewBertForSequenceClassification(cfg, seed)
		if err != nil {
			return nil, fmt.Errorf("mxint8 memory report %s: %w", name, err)
		}
		f.Parameters = m.NumParameters("")
		mg, err := mase.NewMaseGraph(m, nil)
		if err != nil {
			return nil, fmt.Errorf("mxint8 memory report %s: %w", name, err)
		}
		_, r, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: groupSize, Embeddings: emb})
		if err != nil {
			return nil, fmt.Errorf("mxint8 memory report %s: %w", name, err)
		}
		if emb {
			f.WithEmbeddings = r
		} else {
			f.LinearsOnly = r
		}
	}
	return f, nil
}

// String formats the two reports' totals.
func (f *MemoryFigures) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d layers × %d hidden, %d parameters), MXINT8 group size %d:\n", f.Name, f.Config.NumHiddenLayers, f.Config.HiddenSize, f.Parameters, f.GroupSize)
	for _, r := range []struct {
		what string
		r    passes.PackReport
	}{{"Linear layers packed", f.LinearsOnly}, {"Linear layers + embeddings packed", f.WithEmbeddings}} {
		fmt.Fprintf(&b, "  %-34s FP32 %11d B → %11d B (%d modules): saving %.2f%% (theoretical %.5f%%)\n",
			r.what, r.r.BytesBefore, r.r.BytesAfter, len(r.r.Layers), 100*r.r.Saving, 100*r.r.Theoretical)
	}
	return b.String()
}

// PredictionTolerance bounds how far MXINT8 packing may move a logit,
// relative to the largest |logit| of the FP32 model on the same batch.
// Packing rounds each weight to a multiple of its group's 2^(E−127)/64,
// moving it by at most half that step: 2^−7 of the group's scale, under
// 0.8% of the group's largest weight. A logit sums thousands of such
// products through the encoder layers, and independent rounding errors
// mostly cancel in a sum, so the logits move by far less than 2^−7; the
// tolerance allows twice that bound, 2^−6 ≈ 1.6%, for the errors of the
// layers compounding. MASE's Lab 4 shows the same closeness on its
// DeBERTa: 7.3452 → 7.3502, a change of 0.07%.
const PredictionTolerance = 1.0 / 64

// PredictionCheck is the lab's check that the packed model still predicts
// what the FP32 one does (MASE's Lab 4: "joy" before and after, logits
// within a few thousandths): one batch of test sentences run through the
// model before and after passes.PackLinears.
type PredictionCheck struct {
	GroupSize int    `json:"group_size"`
	Packed    int    `json:"packed_modules"` // modules PackLinears replaced
	Origin    string `json:"origin"`         // where the model came from
	// Texts and Labels are the batch's sentences and their labels.
	Texts  []string `json:"texts"`
	Labels []int    `json:"labels"`
	// FP32 and MXINT8 are the logits [sentence][class] before and after.
	FP32   [][]float32 `json:"fp32"`
	MXINT8 [][]float32 `json:"mxint8"`
	// MaxAbsDiff is the largest |logit change|; Scale the largest FP32
	// |logit|: the check passes when MaxAbsDiff ≤ PredictionTolerance·Scale.
	MaxAbsDiff float64 `json:"max_abs_diff"`
	Scale      float64 `json:"scale"`
	// Same counts the sentences whose predicted class is unchanged;
	// Flipped lists the others (a class can only change where the FP32
	// margin between the two largest logits is under 2·MaxAbsDiff).
	Same    int   `json:"same"`
	Flipped []int `json:"flipped,omitempty"`
	// Correct counts the sentences each model classifies right.
	CorrectFP32, CorrectMXINT8 int `json:"-"`
}

// Pass reports whether the logits stayed within PredictionTolerance and
// every class that changed had a margin too small to survive that change.
func (c *PredictionCheck) Pass() bool {
	if c.MaxAbsDiff > PredictionTolerance*c.Scale {
		return false
	}
	for _, i := range c.Flipped {
		if margin(c.FP32[i]) >= 2*c.MaxAbsDiff {
			return false
		}
	}
	return true
}

// RelativeDiff is MaxAbsDiff over Scale.
func (c *PredictionCheck) RelativeDiff() float64 {
	if c.Scale == 0 {
		return 0
	}
	return c.MaxAbsDiff / c.Scale
}

// argmax is the index of the largest value (the first of equal ones).
func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// margin is the gap between the largest and the second largest value.
func margin(v []float32) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) < 2 {
		return math.Inf(1)
	}
	return float64(s[len(s)-1] - s[len(s)-2])
}

// MXINT8PredictionCheck runs m (a sequence classifier: input_ids and
// attention_mask in, logits out) on the first n test sentences of the
// labs' dataset (Options), packs its Linear layers as MXINT8 with the
// lab's settings (group size groupSize, the classifier left FP32), runs
// the same batch again and compares. m is packed in place.
func MXINT8PredictionCheck(m *nn.Model, origin string, n, groupSize int) (*PredictionCheck, error) {
	_, test, err := finetune.LoadSplits(Options())
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.BertBaseUncased()
	if err != nil {
		return nil, err
	}
	examples := test.Examples[:min(n, len(test.Examples))]
	var batch *data.Batch
	for b, err := range data.Batches(examples, tok, data.BatchOptions{BatchSize: len(examples), MaxLength: Options().MaxLen}) {
		if err != nil {
			return nil, err
		}
		batch = b
		break
	}
	if batch == nil {
		return nil, fmt.Errorf("mxint8 prediction check: no test sentences")
	}
	return PredictOnBatch(m, origin, batch, examples, groupSize)
}

// PredictOnBatch is MXINT8PredictionCheck on a given batch of examples.
func PredictOnBatch(m *nn.Model, origin string, batch *data.Batch, examples []data.Example, groupSize int) (*PredictionCheck, error) {
	mg, err := mase.NewMaseGraph(m, []string{"input_ids", "attention_mask"})
	if err != nil {
		return nil, err
	}
	inputs := batch.Tensors()
	delete(inputs, "labels")
	logits := func() ([][]float32, error) {
		outs, err := execute.Run(mg, inputs)
		if err != nil {
			return nil, err
		}
		defer execute.Finalize(outs...)
		if len(outs) == 0 || outs[0].Rank() != 2 {
			return nil, fmt.Errorf("mxint8 prediction check: the model's first output is not [batch, classes] logits")
		}
		flat, err := tensors.CopyFlatData[float32](outs[0])
		if err != nil {
			return nil, err
		}
		classes := outs[0].Shape().Dimensions[1]
		rows := make([][]float32, 0, len(flat)/classes)
		for i := 0; i < len(flat); i += classes {
			rows = append(rows, flat[i:i+classes])
		}
		return rows, nil
	}
	c := &PredictionCheck{GroupSize: groupSize, Origin: origin}
	if c.FP32, err = logits(); err != nil {
		return nil, err
	}
	_, rep, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: groupSize, Exclude: []string{"classifier"}})
	if err != nil {
		return nil, err
	}
	c.Packed = len(rep.Layers)
	if c.MXINT8, err = logits(); err != nil {
		return nil, err
	}
	for i := range c.FP32 {
		if i >= len(examples) || batch.Indices[i] < 0 {
			break
		}
		ex := examples[batch.Indices[i]]
		c.Texts, c.Labels = append(c.Texts, ex.Text), append(c.Labels, ex.Label)
		a, b := argmax(c.FP32[i]), argmax(c.MXINT8[i])
		if a == b {
			c.Same++
		} else {
			c.Flipped = append(c.Flipped, i)
		}
		if a == ex.Label {
			c.CorrectFP32++
		}
		if b == ex.Label {
			c.CorrectMXINT8++
		}
		for j, x := range c.FP32[i] {
			c.Scale = math.Max(c.Scale, math.Abs(float64(x)))
			c.MaxAbsDiff = math.Max(c.MaxAbsDiff, math.Abs(float64(c.MXINT8[i][j]-x)))
		}
	}
	c.FP32, c.MXINT8 = c.FP32[:len(c.Texts)], c.MXINT8[:len(c.Texts)]
	return c, nil
}

// Markdown shows the first show sentences (text, label, both models'
// logits and classes) and the verdict.
func (c *PredictionCheck) Markdown(show int) string {
	var b strings.Builder
	classes := []string{"negative", "positive"}
	name := func(k int) string {
		if k < len(classes) {
			return classes[k]
		}
		return fmt.Sprint(k)
	}
	logits := func(v []float32) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprintf("%.4f", x)
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	b.WriteString("| sentence | label | FP32 logits | FP32 class | MXINT8 logits | MXINT8 class |\n|---|---|---|---|---|---|\n")
	for i := range min(show, len(c.Texts)) {
		text := c.Texts[i]
		if r := []rune(text); len(r) > 80 {
			text = string(r[:77]) + "…"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(text), name(c.Labels[i]), logits(c.FP32[i]), name(argmax(c.FP32[i])),
			logits(c.MXINT8[i]), name(argmax(c.MXINT8[i])))
	}
	n := len(c.Texts)
	fmt.Fprintf(&b, "\nThe model: %s. %d Linear modules packed (group size %d, the classifier left FP32); %d test sentences:\n\n", c.Origin, c.Packed, c.GroupSize, n)
	fmt.Fprintf(&b, "- **Same predicted class**: %d of %d.", c.Same, n)
	if len(c.Flipped) > 0 {
		fmt.Fprintf(&b, " Changed: sentence %v, whose FP32 margins between the two logits are under 2 × the largest logit change, so a change of that size can swap them.", c.Flipped)
	}
	fmt.Fprintf(&b, "\n- **Logits**: the largest change is %.2g, %.3f%% of the largest FP32 |logit| (%.3g); the tolerance is %.2f%% (2^−6): **%s**.\n",
		c.MaxAbsDiff, 100*c.RelativeDiff(), c.Scale, 100*PredictionTolerance, map[bool]string{true: "within it", false: "NOT within it"}[c.MaxAbsDiff <= PredictionTolerance*c.Scale])
	fmt.Fprintf(&b, "- **Accuracy on these sentences**: FP32 %d of %d, MXINT8 %d of %d.\n", c.CorrectFP32, n, c.CorrectMXINT8, n)
	return b.String()
}

// MemoryRow is one packing of one model in the memory table.
type MemoryRow struct {
	Model      string            `json:"model"`
	Embeddings bool              `json:"embeddings"`
	Report     passes.PackReport `json:"report"`
	// PackedFP32 is the FP32 bytes of the modules packed; Left maps
	// "embeddings", "LayerNorm", "classifier" and "other" to the FP32
	// bytes of the parameters left unpacked.
	PackedFP32 int64            `json:"packed_fp32_bytes"`
	Left       map[string]int64 `json:"left_fp32_bytes"`
}

// Share is the part of the FP32 bytes that sits in packed modules.
func (r MemoryRow) Share() float64 { return float64(r.PackedFP32) / float64(r.Report.BytesBefore) }

// MXINT8MemoryTable packs bert-tiny and LargeBertConfig's BERT (random
// weights, seed 1) as the lab does (every Linear but the classifier, group
// size groupSize), then with the embeddings too, and accounts for what
// stays FP32.
func MXINT8MemoryTable(groupSize int) ([]MemoryRow, error) {
	var rows []MemoryRow
	for _, c := range []struct {
		name string
		cfg  models.BertConfig
	}{{"bert-tiny", models.BertTinyConfig()}, {"BERT 12×768", LargeBertConfig()}} {
		for _, emb := range []bool{false, true} {
			m, err := models.NewBertForSequenceClassification(c.cfg, 1)
			if err != nil {
				return nil, err
			}
			mg, err := mase.NewMaseGraph(m, nil)
			if err != nil {
				return nil, err
			}
			_, rep, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: groupSize, Embeddings: emb, Exclude: []string{"classifier"}})
			if err != nil {
				return nil, err
			}
			row := MemoryRow{Model: c.name, Embeddings: emb, Report: rep, Left: map[string]int64{}}
			for _, l := range rep.Layers {
				row.PackedFP32 += l.FP32Bytes
			}
			for _, prm := range mg.Model.Parameters() {
				bytes := int64(prm.Variable.Shape().Size() * prm.Variable.DType().Size())
				switch {
				case strings.Contains(prm.Name, "LayerNorm"):
					row.Left["LayerNorm"] += bytes
				case strings.Contains(prm.Name, "classifier"):
					row.Left["classifier"] += bytes
				case strings.Contains(prm.Name, "embeddings"):
					row.Left["embeddings"] += bytes
				default:
					row.Left["other"] += bytes
				}
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// MemoryMarkdown is the memory table with a line per model checking that
// the saving is the theoretical one times the share of bytes packed.
func MemoryMarkdown(rows []MemoryRow) string {
	mb := func(b int64) string { return fmt.Sprintf("%.2f MB", float64(b)/1e6) }
	var b strings.Builder
	b.WriteString("| model | packed | modules packed | FP32 | after | saving | share of bytes in packed modules | left FP32: embeddings / LayerNorm / classifier |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	var notes []string
	for _, r := range rows {
		what := "Linear layers (the lab's)"
		if r.Embeddings {
			what = "Linear + embeddings"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %.2f%% | %.2f%% | %s / %s / %s |\n", r.Model, what, len(r.Report.Layers), mb(r.Report.BytesBefore),
			mb(r.Report.BytesAfter), 100*r.Report.Saving, 100*r.Share(), mb(r.Left["embeddings"]), mb(r.Left["LayerNorm"]), mb(r.Left["classifier"]))
		if r.Left["other"] != 0 {
			notes = append(notes, fmt.Sprintf("%s, %s: %s in other FP32 parameters", r.Model, what, mb(r.Left["other"])))
		}
		if !r.Embeddings {
			theory := r.Report.Theoretical
			notes = append(notes, fmt.Sprintf("%s, Linear layers only: %.1f%% of the bytes are packed, and %.1f%% × %.2f%% = %.2f%%, the saving measured (%.2f%%)",
				r.Model, 100*r.Share(), 100*r.Share(), 100*theory, 100*r.Share()*theory, 100*r.Report.Saving))
		}
	}
	b.WriteString("\n")
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s.\n", n)
	}
	if len(rows) > 0 {
		need := mxint8.LabMeasuredSaving / rows[0].Report.Theoretical
		fmt.Fprintf(&b, "- MASE's %.1f%% would need %.1f%% of the memory in packed layers if it were parameter memory alone.\n", 100*mxint8.LabMeasuredSaving, 100*need)
	}
	return b.String()
}
