from nbgen import code, md, write

md(r"""
# Lab 1 — compression: quantization (Tutorial 3, Task 1) and pruning (Tutorial 4, Task 2)

MASE's Lab 1 in Go. Starting from the model fine-tuned in Lab 0 Tutorial 2, it quantizes every Linear layer to fixed point
after training (PTQ), keeps training the quantized model (QAT, straight-through gradients), sweeps the fixed-point width,
then prunes weights and activations, fine-tunes, and sweeps the sparsity for random and L1-norm pruning. Every point of a
sweep starts from the same trained checkpoint.

| MASE (Python) | gomase (Go) |
|---|---|
| `MaseGraph.from_checkpoint("~/tutorial_2_lora")` | `checkpoint.Import(path)` (`compress.Session.Load`) |
| `passes.quantize_transform_pass(mg, pass_args=quantization_config)` | `passes.QuantizeTransform(mg, passes.QuantizeArgs{...})` |
| `quantization_config` dict (`by`, `default`, `linear`: `config`) | the same shape: `passes.ParseQuantizeArgs(map)`, `QuantizeArgsFromJSON`, `QuantizeArgsFromTOML` |
| `LinearInteger`, `integer_quantizer(x, width, frac_width)` | `nn.QuantizedLinear` (shown as `LinearInteger`), `quant` package |
| `passes.prune_transform_pass(mg, pass_args=pruning_config)` | `passes.PruneTransform(mg, args)` |
| `trainer.train()` / `trainer.evaluate()` | `compress.Session.FineTune` / `Evaluate` (HF Trainer's AdamW, schedule, clipping) |

**Differences from MASE** (details in docs/quantization.md and docs/pruning.md): the pass never modifies its config (MASE pops
`"by"`, so a second call raises `KeyError`), every Linear keeps its bias, a config for an op gomase does not quantize is an
error rather than a silent skip, and every sweep point reloads the checkpoint (the pass changes the graph in place).

**The starting model** is Tutorial 2's fine-tuned bert-tiny. When that notebook could get the pretrained
`prajjwal1/bert-tiny` weights (your HuggingFace cache, or the hub), it started from them as MASE does (MASE reports 0.83
from there); otherwise it started from a random initialisation (about 0.67 on SST-2 at the standard scale, 0.64 at the
quick scale), so absolute accuracies are lower and the shapes of the curves are what this lab reproduces. Tutorial 2's
SFT cell says which start it took. **Scale:** the *standard* scale (the default without a GPU) starts from a model trained on
4,000 SST-2 sentences at 64 tokens and fine-tunes every sweep point on 2,000 of them, with all 7 widths and 4 of the 9
sparsities; the *quick* scale (CI) uses 2,000 sentences throughout and a few sweep points; the *full* scale (the default on
a GPU) is the lab's IMDb at 512 tokens with every point.
""")

code(r"""
import (
	"fmt"

	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/compress"
	"github.com/gomase/gomase/mase/labsetup"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/train"
	"github.com/gomase/gomase/mase/ui/display"
	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/progress"
	"github.com/gomase/gomase/mase/ui/widget"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// must1 returns v, panicking on err.
func must1[T any](v T, err error) T {
	must(err)
	return v
}

// session is shared by every experiment: the trained starting checkpoint, the data and the training setup.
func session() *compress.Session {
	start, origin, err := labsetup.TrainedStart(&progress.Notebook{Title: "fine-tuning the starting model"})
	must(err)
	fmt.Println("starting point:", origin)
	o := labsetup.SweepOptions()
	trainData, testData, err := labsetup.Splits(o)
	must(err)
	return &compress.Session{Checkpoint: start, Train: trainData, Test: testData, Batch: labsetup.Batch(o),
		Config: labsetup.TrainConfig(),
		Progress: func(title string) train.Progress { return &progress.Notebook{Title: title} }}
}

// show renders a chart inline (and in the HTML report).
func show(c plot.Chart) { widget.Show(must1(widget.LineChart(c))) }

// widths and sparsities of the sweeps: every point of the lab at full scale, every width and four sparsities at standard
// scale, a few of each at quick scale.
func widths() []int {
	return labsetup.ByScale([]int{4, 8, 16}, []int{4, 6, 8, 12, 16, 24, 32}, []int{4, 6, 8, 12, 16, 24, 32})
}

func sparsities() []float64 {
	return labsetup.ByScale([]float64{0.3, 0.7}, []float64{0.3, 0.5, 0.7, 0.9},
		[]float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9})
}
""")

md(r"""
## Tutorial 3 · 1. The starting model and its baseline

The lab loads `~/tutorial_2_lora` (Tutorial 2's fine-tuned, LoRA-fused model). Here that is
`~/gomase-labs/tutorial_2_lora` when the Tutorial 2 notebook has run; otherwise the model is fine-tuned now, as Tutorial 2's
SFT step does. The graph was traced with `input_ids`, `attention_mask` and `labels`, so it outputs `(loss, logits)`.
""")

code(r"""
%%
s := session()
mg, err := s.Load()
must(err)
fmt.Println(mg.Summary())
base, err := s.Evaluate(mg)
must(err)
fmt.Printf("baseline (float32) test accuracy: %.4f on %d examples\n", base.Accuracy, base.Examples)
""")

md(r"""
## Tutorial 3 · 2. Post-training quantization (PTQ) to fixed point 8/4

The config is the tutorial's: `by: "type"`, nothing by default, and every `linear` node as `integer` with 8-bit words and 4
fractional bits for the data input, the weight and the bias. Each value becomes `clamp(round(x·2⁴), −128, 127)/2⁴` (round half
to even), so the grid step is 1/16 and the range [−8, 7.9375]. Exactly the 14 Linear modules become `LinearInteger`;
LayerNorm, GELU, the residual adds and the attention matmuls stay in float. The metadata of each quantized node now says
`fixed` with precision `[8, 4]`.
""")

code(r"""
%%
s := session()
cfg := map[string]any{
	"by":      "type",
	"default": map[string]any{"config": map[string]any{"name": nil}},
	"linear": map[string]any{"config": map[string]any{"name": "integer",
		"data_in_width": 8, "data_in_frac_width": 4,
		"weight_width": 8, "weight_frac_width": 4,
		"bias_width": 8, "bias_frac_width": 4}},
}
args, err := passes.ParseQuantizeArgs(cfg)
must(err)
mg, err := s.Load()
must(err)
mg, info, err := passes.QuantizeTransform(mg, args)
must(err)
fmt.Println("quantized modules:", len(info["quantized"].([]string)))
for _, r := range passes.QuantizeSummary(mg) {
	fmt.Println(" ", r)
}
m, _ := mg.Model.Module("bert.encoder.layer.0.intermediate.dense")
fmt.Println("bert.encoder.layer.0.intermediate.dense is now", m.TypeName())
ptq, err := s.Evaluate(mg)
must(err)
fmt.Printf("PTQ (8/4) test accuracy: %.4f\n", ptq.Accuracy)
must(checkpoint.Export(must1(labsetup.Checkpoint("tutorial_3_ptq")), mg, checkpoint.Spec{}))

// The same config works a second time: the pass does not modify it (MASE raises KeyError: 'by').
_, _, err = passes.QuantizeTransform(must1(s.Load()), args)
fmt.Println("second call with the same config:", err == nil)
""")

md(r"""
## Tutorial 3 · 3. Quantization-aware training (QAT)

Training continues on the quantized graph: the forward pass uses the quantized values, and the straight-through estimator
passes each quantizer's gradient through unchanged, so the float weights keep learning while the network adapts to the grid.
One epoch, then evaluate and save `tutorial_3_qat` (Tutorial 4 starts from it).
""")

code(r"""
%%
s := session()
args, err := passes.ParseQuantizeArgs(map[string]any{"by": "type", "linear": map[string]any{"config": map[string]any{"name": "integer",
	"data_in_width": 8, "data_in_frac_width": 4, "weight_width": 8, "weight_frac_width": 4, "bias_width": 8, "bias_frac_width": 4}}})
must(err)
mg, ptq, err := s.PTQ(args)
must(err)
qat, err := s.QAT(mg, "QAT 8/4: training loss")
must(err)
fmt.Printf("PTQ %.4f → QAT %.4f\n", ptq, qat)
must(checkpoint.Export(must1(labsetup.Checkpoint("tutorial_3_qat")), mg, checkpoint.Spec{}))
""")

md(r"""
## Lab 1 · Task 1: fixed-point width sweep

For each width (fractional width = width/2 for data, weights and biases, as the seeds do), quantize a fresh copy of the
trained model, evaluate (PTQ), train one epoch (QAT), evaluate again. Expected shape: QAT ≥ PTQ at every width, both near
chance at 4 bits, and both flat near the float baseline from about 12–16 bits.
""")

code(r"""
%%
s := session()
base, err := s.Evaluate(must1(s.Load()))
must(err)
points, err := s.WidthSweep(widths(), func(p compress.WidthPoint) {
	fmt.Printf("width %2d (frac %2d): PTQ %.4f  QAT %.4f\n", p.Width, p.FracWidth, p.PTQ, p.QAT)
})
must(err)
show(compress.WidthChart(points, base.Accuracy))
""")

md(r"""
## Tutorial 4 · Unstructured pruning (L1-norm, 50%, weights and activations)

The tutorial starts from `~/tutorial_3_qat` and prunes with

```python
pruning_config = {
    "weight":     {"sparsity": 0.5, "method": "l1-norm", "scope": "local"},
    "activation": {"sparsity": 0.5, "method": "l1-norm", "scope": "local"},
}
```

Each of the 14 Linear-like modules (here `LinearInteger`) gets a weight mask `|W| > t`, with `t` the 50% quantile of its own
`|W|` (linear interpolation, as `torch.quantile`), applied as a parametrisation: the effective weight is `mask ⊙ W` on every
forward, so pruned weights stay zero while fine-tuning. Activations are masked the same way, but the threshold is recomputed
from each input batch on every forward. (The notebook text of the lab says "random pruning"; its config is `l1-norm`.) MASE
fine-tunes for 5 epochs, as the full scale does; the quick and standard scales fine-tune for one.
""")

code(r"""
%%
s := session()
s.Checkpoint = must1(labsetup.Checkpoint("tutorial_3_qat"))
s.Config.Epochs = labsetup.ByScale(1, 1, 5)
args, err := passes.PruneArgsFromJSON([]byte(`{
	"weight":     {"sparsity": 0.5, "method": "l1-norm", "scope": "local"},
	"activation": {"sparsity": 0.5, "method": "l1-norm", "scope": "local"}}`))
must(err)
start, err := s.Evaluate(must1(s.Load()))
must(err)
mg, pruned, err := s.Prune(args)
must(err)
rows, info, err := passes.ReportWeightSparsity(mg)
must(err)
for _, r := range rows[:3] {
	fmt.Printf("  %-45s %6d of %6d weights zero\n", r.Module, r.Zeros, r.Total)
}
fmt.Printf("  ... %d modules, overall weight sparsity %.4f\n", len(rows), info["sparsity"])
tuned, err := s.QAT(mg, "fine-tuning the pruned model: training loss")
must(err)
fmt.Printf("QAT model %.4f → pruned %.4f → fine-tuned %.4f\n", start.Accuracy, pruned, tuned)
_, info, err = passes.ReportWeightSparsity(mg)
must(err)
fmt.Printf("weight sparsity after fine-tuning: %.4f (the masks keep pruned weights at zero)\n", info["sparsity"])
must(checkpoint.Export(must1(labsetup.Checkpoint("tutorial_4_pruned")), mg, checkpoint.Spec{}))
""")

md(r"""
## Lab 1 · Task 2: sparsity sweep, random vs L1-norm

Each point prunes a fresh copy of the Tutorial 3 QAT model (weights and activations, local scope, the same sparsity for
both), evaluates it, fine-tunes it for one epoch and evaluates again. Expected shape (the seeds): L1-norm stays at or above
random at every sparsity; random falls to chance (0.5) by about 0.5–0.7, while L1-norm holds up until 0.7–0.9. Unstructured
sparsity gives no speed-up on dense hardware: the masked matrices are still multiplied in full.
""")

code(r"""
%%
s := session()
s.Checkpoint = must1(labsetup.Checkpoint("tutorial_3_qat"))
start, err := s.Evaluate(must1(s.Load()))
must(err)
points, err := s.SparsitySweep(sparsities(), []string{passes.PruneRandom, passes.PruneL1}, func(p compress.SparsityPoint) {
	fmt.Printf("sparsity %.1f %-8s pruned %.4f  fine-tuned %.4f\n", p.Sparsity, p.Method, p.Pruned, p.FineTuned)
})
must(err)
show(compress.SparsityChart(points, start.Accuracy, true))
""")

write()
