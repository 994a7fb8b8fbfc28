from nbgen import code, md, write

md(r"""
# Lab 3 — mixed-precision search (Tutorial 6, Tasks 1 and 2, the cost function)

MASE's Lab 3 in Go. Starting from Lab 2's best model, a search study chooses for every Linear layer whether it stays in full
precision or becomes a quantized Linear, trains the result for an epoch (quantization-aware) and scores it. Task 1 adds
per-layer fixed-point widths; Task 2 tries every number format of Lab 1, one curve per format, then all of them mixed; the
last part weighs accuracy against the average number of bits.

| MASE (Python, Optuna) | gomase (Go) |
|---|---|
| `base_model = dill.load(open("~/tutorial_5_best_model.pkl"))` | `compress.Session{Checkpoint: ".../tutorial_5_best_model"}` |
| `search_space = {"linear_layer_choices": [nn.Linear, LinearInteger]}` | `mixedprecision.FormatSpace("integer")` |
| `construct_model(trial)` | `space.Apply(trial, graph)` |
| `LinearInteger(in, out, config={...})`, `LinearMinifloatIEEE`, ... | `mixedprecision.FormatConfig(format, width, frac)` → `nn.QuantizedLinear` |
| `objective(trial)`: train 1 epoch, evaluate | `mixedprecision.NewObjective(space, session).Run` |
| `calculate_avg_bits_mg_analysis_pass(mg)` | `passes.CalculateAvgBits(mg)` (MASE's figure and the real storage bits) |
| `accuracy − λ·avg_bits` | `Objective.Lambda`, `Objective.Bits` |

**Differences from MASE** (docs/lab3.md): a quantized layer keeps the trained bias (MASE's constructor copies only the
weight, so the bias starts again from random); every format works, because MASE's metadata pass fails with a `KeyError` on
anything but `LinearInteger`; and two bit counts are reported: MASE's, which adds up the precision list (integer 8/4 counts
as 12 "bits"), and the real storage cost per element (8 bits for integer 8/4, plus the shared exponent per block for block
formats).

**Scale.** As in Lab 2, the *standard* scale (the default without a GPU) uses 2,000 SST-2 sentences at 32 tokens,
evaluated on all 872 test sentences, with fewer trials per study than the lab (10 in Task 1, 2 per format for all 12
formats, 6 mixed, 8 with the cost function); the *quick* scale (CI) runs fewer trials on 5 formats and evaluates on
400 sentences; the *full* scale (the default on a GPU) uses the lab's IMDb at 512 tokens with the lab's trial counts.
""")

code(r"""
import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gomase/gomase/mase/compress"
	"github.com/gomase/gomase/mase/labsetup"
	"github.com/gomase/gomase/mase/mixedprecision"
	"github.com/gomase/gomase/mase/quant"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/ui/display"
	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/progress"
	"github.com/gomase/gomase/mase/ui/searchplot"
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


// session starts every trial from Lab 2's best model (tutorial_5_best_model) when the Lab 2 notebook has made it, else
// from bert-tiny fine-tuned as in Lab 0 Tutorial 2 (the HEAD script's option B; from the pretrained weights when they can be had).
func session() *compress.Session {
	start := must1(labsetup.Checkpoint("tutorial_5_best_model"))
	origin := "Lab 2's tutorial_5_best_model"
	if !labsetup.Exists(start) {
		var err error
		start, origin, err = labsetup.TrainedStart(&progress.Notebook{Title: "fine-tuning the starting model"})
		must(err)
	}
	fmt.Println("starting point:", origin)
	o := labsetup.SearchOptions()
	trainData, testData, err := labsetup.Splits(o)
	must(err)
	cfg := labsetup.TrainConfig()
	cfg.LogEvery = 0
	return &compress.Session{Checkpoint: start, Train: trainData, Test: testData, Batch: labsetup.Batch(o), Config: cfg}
}

// liveStudy makes a maximising study whose progress shows as one updating line under the cell.
func liveStudy(name string, sampler search.Sampler, total int) *search.Study {
	return must1(labsetup.LiveStudy(name, sampler, total))
}

// tpe is the TPE sampler of the lab, with fewer random start-up trials below full scale.
func tpe() search.Sampler {
	return must1(search.NewTPESampler(search.TPEOptions{Seed: labsetup.Seed, NStartupTrials: labsetup.ByScale(3, 4, 10)}))
}

// show renders a line chart inline (and in the HTML report).
func show(c plot.Chart) { widget.Show(must1(widget.LineChart(c))) }

// layerTable shows each layer's choice in a trial: type and, for integer layers with searched widths, the widths.
func layerTable(t search.FrozenTrial) {
	var names []string
	for k := range t.Params {
		if strings.HasSuffix(k, "_type") {
			names = append(names, strings.TrimSuffix(k, "_type"))
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| layer | type | width | frac width |\n|---|---|---|---|\n")
	for _, n := range names {
		w, f := t.Params[n+"_width"], t.Params[n+"_frac_width"]
		if w == nil {
			w, f = "", ""
		}
		fmt.Fprintf(&b, "| %s | %v | %v | %v |\n", n, t.Params[n+"_type"], w, f)
	}
	display.Markdown(b.String())
}
""")

md(r"""
## Tutorial 6 · 1. The base model and the formats

The base model is evaluated once in full precision. Then the formats the search can use: the config each gets at 8 bits
(`FormatConfig`; integer is 8/4), MASE's class name, and both bit counts for its weights.
""")

code(r"""
%%
s := session()
base := must1(s.Evaluate(must1(s.Load())))
fmt.Printf("base model (float32) test accuracy: %.4f on %d examples\n\n", base.Accuracy, base.Examples)
var b strings.Builder
b.WriteString("| format | MASE class | weight storage bits | MASE's precision sum |\n|---|---|---|---|\n")
for _, f := range mixedprecision.Formats {
	cfg := must1(mixedprecision.FormatConfig(f, 8, 4))
	lc := must1(quant.ParseLinearConfig(cfg))
	class := must1(quant.LinearTypeName(f))
	storage := must1(lc.Weight.BitsPerElementFor([]int{128, 128}))
	maseSum := "fails (None or a block-size list)"
	if v, err := lc.Weight.PrecisionSum(); err == nil {
		maseSum = fmt.Sprint(v)
	}
	fmt.Fprintf(&b, "| %s | %s | %.3f | %s |\n", f, class, storage, maseSum)
}
display.Markdown(b.String())
""")

md(r"""
## Tutorial 6 · 2. Float or LinearInteger per layer

The tutorial's space: every Linear is either kept or replaced by `LinearInteger` 8/4, one categorical choice per layer,
named `<module path>_type`. One random trial (the tutorial runs one, as the full scale does; the others two). "Quantized layers: k/N" is what the
HEAD script prints.
""")

code(r"""
%%
n := labsetup.ByScale(2, 2, 1)
obj := mixedprecision.NewObjective(mixedprecision.FormatSpace(quant.Integer), session())
st := liveStudy("bert-tiny-mixed-precision-study", search.NewRandomSampler(labsetup.Seed), n)
must(st.Optimize(context.Background(), obj.Run, n, 0))
best := must1(st.BestTrial())
fmt.Printf("Quantized layers: %v\nBest accuracy: %.4f\n", best.UserAttrs["quantized_layers"], best.Value)
fmt.Printf("weights: %.2f storage bits per element (MASE's figure %.2f)\n", best.UserAttrs["w_storage_bits"], best.UserAttrs["mase_w_avg_bits"])
layerTable(best)
""")

md(r"""
## Task 1 · Per-layer widths (TPE)

Each layer chosen as integer also gets its own width ∈ {8, 16, 32} and fractional width ∈ {2, 4, 8}. The seeds found the
best models keep a few sensitive layers (the first layer's Q/K/V) in float and use wide integer formats elsewhere.
""")

code(r"""
%%
n := labsetup.ByScale(6, 10, 20)
obj := mixedprecision.NewObjective(mixedprecision.Task1Space(), session())
st := liveStudy("Task 1: integer widths", tpe(), n)
must(st.Optimize(context.Background(), obj.Run, n, 0))
best := must1(st.BestTrial())
fmt.Printf("best trial %d: accuracy %.4f, %v layers quantized, %.2f weight bits per element\n", best.Number, best.Value,
	best.UserAttrs["quantized_layers"], best.UserAttrs["w_storage_bits"])
ts := must1(st.Trials())
show(searchplot.BestSoFarChart("Task 1: best accuracy so far (TPE, per-layer widths)", search.Maximize,
	[]searchplot.Named{{Name: "TPE", Trials: ts}}))
layerTable(best)
""")

md(r"""
## Task 2 · Every precision, one curve each

For each format, a study whose layers are either float or that format at 8 bits; the plot shows each study's best accuracy
so far. The seeds: integer, minifloat and block floating point end close to the float model; log and block log, with their
power-of-two grids, lose the most; pure binary layers collapse to chance unless the search keeps most layers in float. The
quick scale tries five formats for three trials each; the standard scale all 12 for two trials each, the full scale
all 12 for 20.
""")

code(r"""
%%
n := labsetup.ByScale(3, 2, 20)
formats := labsetup.ByScale([]string{quant.Integer, quant.MinifloatIEEE, quant.Log, quant.BlockFP, quant.Binary}, mixedprecision.Formats,
	mixedprecision.Formats)
sess := session()
var studies []searchplot.Named
tbl := widget.NewTable("Task 2: best trial per precision", "format", "best accuracy", "quantized layers", "weight bits")
for _, f := range formats {
	obj := mixedprecision.NewObjective(mixedprecision.FormatSpace(f), sess)
	st := liveStudy(must1(quant.LinearTypeName(f)), tpe(), n)
	must(st.Optimize(context.Background(), obj.Run, n, 0))
	studies = append(studies, searchplot.Named{Name: f, Trials: must1(st.Trials())})
	best := must1(st.BestTrial())
	must(tbl.AddRow(f, best.Value, best.UserAttrs["quantized_layers"], best.UserAttrs["w_storage_bits"]))
}
widget.Show(tbl)
show(searchplot.BestSoFarChart("Task 2: best accuracy so far, one curve per precision", search.Maximize, studies))
""")

md(r"""
### All formats mixed

One study whose layers may take any format (or stay float). The bar chart shows how many layers of each type the best model
uses.
""")

code(r"""
%%
n := labsetup.ByScale(4, 6, 40)
obj := mixedprecision.NewObjective(mixedprecision.AllFormatsSpace(), session())
st := liveStudy("Task 2: all formats", tpe(), n)
must(st.Optimize(context.Background(), obj.Run, n, 0))
best := must1(st.BestTrial())
fmt.Printf("best trial %d: accuracy %.4f, %v layers quantized, %.2f weight bits per element\n", best.Number, best.Value,
	best.UserAttrs["quantized_layers"], best.UserAttrs["w_storage_bits"])
counts := must1(searchplot.LayerTypeCounts(best))
widget.Show(must1(widget.BarChart(searchplot.LayerTypeChart("Layer types of the best mixed-precision model", counts))))
""")

md(r"""
## The cost function: accuracy − λ · average bits

The objective becomes `accuracy − λ·w_avg_bits`, where `w_avg_bits` is the element-weighted mean bits per weight of the
Linear layers. With λ = 0.005 a model all in float pays 0.16 and one all in integer 8/4 pays 0.04, so the search trades a
little accuracy for fewer bits. The cost uses the real storage bits; MASE's figure (which counts integer 8/4 as 12) is
recorded beside it. The scatter shows every trial's accuracy against its bits.
""")

code(r"""
%%
n := labsetup.ByScale(5, 8, 30)
lambda := 0.005
obj := mixedprecision.NewObjective(mixedprecision.Task1Space(), session())
obj.Lambda = lambda
st := liveStudy("cost: accuracy − λ·bits", tpe(), n)
must(st.Optimize(context.Background(), obj.Run, n, 0))
ts := must1(st.Trials())
var xs, ys []float64
tbl := widget.NewTable("Cost search: every complete trial", "trial", "accuracy", "storage bits", "MASE bits", "objective")
for _, t := range ts {
	if t.State != search.Complete {
		continue
	}
	bits, acc := t.UserAttrs["w_avg_bits"].(float64), t.UserAttrs["accuracy"].(float64)
	xs, ys = append(xs, bits), append(ys, acc)
	must(tbl.AddRow(t.Number, acc, bits, t.UserAttrs["mase_w_avg_bits"], t.Value))
}
widget.Show(tbl)
show(plot.Chart{Title: fmt.Sprintf("Cost search (λ = %g): accuracy against weight bits", lambda), XLabel: "average weight bits (storage)",
	YLabel: "test accuracy", Series: []plot.Series{{Name: "trials", X: xs, Y: ys, Scatter: true}}})
best := must1(st.BestTrial())
fmt.Printf("best trade-off: trial %d, accuracy %.4f at %.2f bits (objective %.4f)\n", best.Number, best.UserAttrs["accuracy"],
	best.UserAttrs["w_avg_bits"], best.Value)
""")

write()
