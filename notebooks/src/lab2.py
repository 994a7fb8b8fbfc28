from nbgen import code, md, write

md(r"""
# Lab 2 — neural architecture search (Tutorial 5, Tasks 1 and 2)

MASE's Lab 2 in Go. A search study samples BERT architectures (layer count, head count, hidden and intermediate sizes, and
for every square Linear layer: keep it or replace it by an Identity), trains each one, and keeps the most accurate. Task 1
compares the Random, Grid and TPE samplers; Task 2 makes the search compression-aware: each trained model goes through the
`CompressionPipeline` (integer 8/4 quantization, then 50% L1-norm pruning) and is scored after compression, with and without
training afterwards.

| MASE (Python, Optuna) | gomase (Go) |
|---|---|
| `search_space = {...}` | `nas.Tutorial5Space()` |
| `construct_model(trial)` | `space.Build(trial, seed)` |
| `trial.suggest_int`, `trial.suggest_categorical` | `trial.SuggestInt`, `search.Categorical(trial, name, choices)` |
| `objective(trial)`: train, `trainer.evaluate()` | `(&nas.Objective{...}).Run` |
| `optuna.create_study(direction="maximize", sampler=...)` | `search.NewStudy(search.Config{Direction: search.Maximize, Sampler: ...})` |
| `RandomSampler()`, `GridSampler(space)`, `TPESampler()` | `search.NewRandomSampler(seed)`, `search.NewGridSampler(grid, seed)`, `search.NewTPESampler(...)` |
| `study.optimize(objective, n_trials, timeout)` | `study.Optimize(ctx, objective, nTrials, timeout)` |
| `study.best_trial.user_attrs["model"]`, `dill.dump` | `nas.Objective.BestPath` (a checkpoint of the best model) |
| `CompressionPipeline()(mg, pass_args={...})` | `passes.CompressionPipeline().Run(mg, args)` |

**Differences from MASE** (docs/lab2.md): `num_layers` and `num_heads` change the model here. MASE writes them to
`BertConfig` attributes that BERT never reads, so every MASE trial model has 2 layers and 2 heads (`Space.LikeMASE` brings
that behaviour back, shown below). Layer choices are the strings `"linear"`/`"identity"` rather than classes, so a study can
be kept in a journal file and resumed. The grid of the Grid sampler covers every architecture with every Linear kept (the
full grid including both layer choices has up to 2⁴⁹ points per architecture).

**Scale.** Trial models start from random weights, as in the lab (each architecture is new). The lab trains each
trial for an epoch of IMDb; on two CPU cores that is hours per trial, so the full run is for a long night (or use
`mase search ... --storage FILE --timeout 8h`, which resumes where it stopped). That is the *full* scale, the default on a GPU. The
*standard* scale (the default without a GPU) searches the smaller `nas.QuickSpace()` (1–2 layers, 2–4 heads, hidden
64/128, intermediate 128/256) on 2,000 SST-2 sentences cut to 32 tokens, evaluated on all 872 test sentences, with 12
trials per sampler in Task 1 and 5 per objective in Task 2: each trial takes seconds and accuracies already differ between
architectures. The *quick* scale (CI) runs fewer trials (8 and 4) and evaluates on 400 test sentences.
""")

code(r"""
import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/gomase/gomase/mase/compress"
	"github.com/gomase/gomase/mase/labsetup"
	"github.com/gomase/gomase/mase/nas"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/ui/display"
	"github.com/gomase/gomase/mase/ui/plot"
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


// session holds the data and training setup every trial shares (labsetup.SearchOptions): IMDb at 512 tokens, one epoch
// (the lab's) at full scale, 2,000 SST-2 sentences at 32 tokens below it.
func session() *compress.Session {
	o := labsetup.SearchOptions()
	trainData, testData, err := labsetup.Splits(o)
	must(err)
	cfg := labsetup.TrainConfig()
	cfg.LogEvery = 0
	return &compress.Session{Train: trainData, Test: testData, Batch: labsetup.Batch(o), Config: cfg}
}

// space is the searched space: the tutorial's at full scale, the quick space below it.
func space() nas.Space { return labsetup.ByScale(nas.QuickSpace(), nas.QuickSpace(), nas.Tutorial5Space()) }

// liveStudy makes a maximising study whose progress shows as one updating line under the cell.
func liveStudy(name string, sampler search.Sampler, total int) *search.Study {
	return must1(labsetup.LiveStudy(name, sampler, total))
}

// show renders a line chart inline (and in the HTML report).
func show(c plot.Chart) { widget.Show(must1(widget.LineChart(c))) }

// table shows a study's completed trials, best first (click a header to sort by another column).
func table(st *search.Study, attrs ...string) {
	ts := must1(st.Trials())
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Value > ts[j].Value })
	tbl := widget.NewTable(st.Name()+": completed trials", append([]string{"trial", "value", "layers", "heads", "hidden", "intermediate", "identities"}, attrs...)...)
	for _, t := range ts {
		if t.State != search.Complete {
			continue
		}
		u := t.UserAttrs
		row := []any{t.Number, t.Value, u["num_hidden_layers"], u["num_attention_heads"], u["hidden_size"], u["intermediate_size"], u["identities"]}
		for _, a := range attrs {
			row = append(row, u[a])
		}
		must(tbl.AddRow(row...))
	}
	widget.Show(tbl)
}

// meanStd returns the mean and the population standard deviation.
func meanStd(v []float64) (mean, std float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}
""")

md(r"""
## Tutorial 5 · 1. The search space

The four architecture parameters are suggested as **indices** into their lists (`trial.suggest_int(name, 0, len − 1)`),
then every Linear layer whose input and output sizes are equal (Q, K, V and the attention output per layer, the pooler, and
the two feed-forward Linears when hidden = intermediate) gets a categorical choice between keeping it and an Identity.
The tutorial's space has 3·4·5·5 = **300** architectures. MASE quotes 300 × 2⁹ = 153,600 trials counting the layer choices,
which assumes 9 square Linears everywhere; counted exactly (13 square Linears when hidden = intermediate = 512) it is
245,760 with MASE's 2-layer models, and with the layer count taking effect far more.
""")

code(r"""
%%
for _, c := range []struct {
	name string
	s    nas.Space
}{{"Tutorial 5 (gomase: num_layers and num_heads take effect)", nas.Tutorial5Space()},
	{"Tutorial 5 like MASE (num_layers and num_heads ignored)", func() nas.Space { s := nas.Tutorial5Space(); s.LikeMASE = true; return s }()},
	{"quick space (quick and standard scale)", nas.QuickSpace()}} {
	archs, total := c.s.Size()
	fmt.Printf("%-58s %4d architectures, %s trials counting the layer choices\n", c.name+":", archs, total)
}
""")

md(r"""
### The `num_layers` / `num_heads` quirk, shown

One trial asks for `num_layers` index 2 (8 layers), `num_heads` index 1 (4 heads) and `hidden_size` index 3 (384). Built
the MASE way, the model still has 2 encoder layers and 2 heads; built by gomase, it has what was asked for.
""")

code(r"""
%%
grid := must1(nas.Tutorial5Space().Grid(nil))
grid[nas.NumLayersParam], grid[nas.NumHeadsParam], grid[nas.HiddenSizeParam], grid[nas.IntermediateSizeParam] = []any{2}, []any{1}, []any{3}, []any{0}
for _, likeMASE := range []bool{true, false} {
	s := nas.Tutorial5Space()
	s.LikeMASE = likeMASE
	st := must1(search.NewStudy(search.Config{Direction: search.Maximize, Sampler: must1(search.NewGridSampler(grid, 0)),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}))
	must(st.Optimize(context.Background(), func(t *search.Trial) (float64, error) {
		_, arch, err := s.Build(t, 0)
		if err == nil {
			fmt.Printf("LikeMASE=%-5v → %d layers, %d heads, hidden %d, %d square Linears, %.1fM parameters\n", likeMASE,
				arch.Config.NumHiddenLayers, arch.Config.NumAttentionHeads, arch.Config.HiddenSize, len(arch.SquareLinears),
				float64(arch.Parameters)/1e6)
		}
		return 0, err
	}, 1, 0))
}
""")

md(r"""
## Tutorial 5 · 2. A random-sampler study

The objective builds the trial's model from random weights, trains it for one epoch, and returns the test accuracy (it also
records the architecture and parameter count as user attributes). The tutorial runs one trial, as the full scale does; the others run three. The
best model is saved as `tutorial_5_best_model` (MASE pickles it to `~/tutorial_5_best_model.pkl`); Lab 3 starts from it.
""")

code(r"""
%%
n := labsetup.ByScale(3, 3, 1)
obj := &nas.Objective{Space: space(), Session: session(), Seed: labsetup.Seed, BestPath: must1(labsetup.Checkpoint("tutorial_5_best_model"))}
st := liveStudy("bert-tiny-nas-study", search.NewRandomSampler(labsetup.Seed), n)
must(st.Optimize(context.Background(), obj.Run, n, 0))
table(st)
best := must1(st.BestTrial())
fmt.Printf("best trial %d: accuracy %.4f; params %v\n", best.Number, best.Value, best.Params)
fmt.Println("saved as", best.UserAttrs["saved_as_best"])
""")

md(r"""
## Task 1 · Random vs Grid vs TPE

The same objective under each sampler, with the same number of trials (the lab and the full scale: 100; standard scale 12, quick 8). The plot shows the best
accuracy found up to each trial, one curve per sampler, as the task asks; the second plot shows every trial's accuracy. The
Grid sampler walks the architecture grid in a seeded random order and never repeats a point; TPE samples at random for its
first 10 trials (Optuna's `n_startup_trials`; 4 at standard and 3 at quick scale so it has a chance to model anything) and then proposes
points where l(x)/g(x), the density of the best quarter of trials over the rest, is highest.
""")

code(r"""
%%
n := labsetup.ByScale(8, 12, 100)
sess := session()
grid := must1(space().Grid(nil))
tpe := must1(search.NewTPESampler(search.TPEOptions{Seed: labsetup.Seed, NStartupTrials: labsetup.ByScale(3, 4, 10)}))
samplers := []struct {
	name    string
	sampler search.Sampler
}{{"Random", search.NewRandomSampler(labsetup.Seed)}, {"Grid", must1(search.NewGridSampler(grid, labsetup.Seed))}, {"TPE", tpe}}
var studies []searchplot.Named
for _, s := range samplers {
	obj := &nas.Objective{Space: space(), Session: sess, Seed: labsetup.Seed}
	st := liveStudy(s.name, s.sampler, n)
	must(st.Optimize(context.Background(), obj.Run, n, 0))
	studies = append(studies, searchplot.Named{Name: s.name, Trials: must1(st.Trials())})
	best := must1(st.BestTrial())
	fmt.Printf("%-6s best %.4f at trial %d\n", s.name, best.Value, best.Number)
}
show(searchplot.BestSoFarChart("Task 1: best accuracy so far, per sampler", search.Maximize, studies))
show(searchplot.TrialScatterChart("Task 1: every trial's accuracy", studies, searchplot.WithBestSoFar(search.Maximize)))
""")

md(r"""
## Task 2 · Compression-aware search

Tutorial 5 ends by compressing its best model with the `CompressionPipeline`: metadata, integer 8/4 quantization of every
Linear, then 50% L1-norm pruning of weights and activations (local). Task 2 moves that into the objective, with TPE:

1. **baseline**: train, return the accuracy (Task 1's objective);
2. **compress only**: train, compress, return the accuracy of the compressed model;
3. **compress + train**: train, compress, train again (quantization-aware, the pruning masks kept), return that accuracy.

The seeds (3 epochs before and after, 10 trials) found compress-only scores scattered well below the baseline and the
compress + train scores at or above it, with a much smaller spread. The full scale does the same; the standard and quick scales train one epoch before and after.
""")

code(r"""
%%
n := labsetup.ByScale(4, 5, 10)
sess := session()
sess.Config.Epochs = labsetup.ByScale(1, 1, 3)
// Tutorial 5's pass_args: integer 8/4 on every Linear, then L1-norm 0.5 (local) on weights and activations.
compression := nas.Tutorial5Compression()
variants := []struct {
	name string
	obj  *nas.Objective
}{
	{"baseline", &nas.Objective{Space: space(), Session: sess, Seed: labsetup.Seed}},
	{"compress only", &nas.Objective{Space: space(), Session: sess, Seed: labsetup.Seed, Compression: compression}},
	{"compress + train", &nas.Objective{Space: space(), Session: sess, Seed: labsetup.Seed, Compression: compression,
		PostEpochs: sess.Config.Epochs, BestPath: must1(labsetup.Checkpoint("tutorial_5_nas_compressed"))}},
}
var studies []searchplot.Named
tbl := widget.NewTable("Task 2: accuracy per objective", "objective", "best", "mean", "std")
for _, v := range variants {
	tpe := must1(search.NewTPESampler(search.TPEOptions{Seed: labsetup.Seed, NStartupTrials: labsetup.ByScale(2, 3, 5)}))
	st := liveStudy(v.name, tpe, n)
	must(st.Optimize(context.Background(), v.obj.Run, n, 0))
	ts := must1(st.Trials())
	studies = append(studies, searchplot.Named{Name: v.name, Trials: ts})
	var vals []float64
	for _, t := range ts {
		if t.State == search.Complete {
			vals = append(vals, t.Value)
		}
	}
	mean, std := meanStd(vals)
	must(tbl.AddRow(v.name, must1(st.BestTrial()).Value, mean, std))
}
widget.Show(tbl)
show(searchplot.BestSoFarChart("Task 2: best accuracy so far (TPE)", search.Maximize, studies))
show(searchplot.TrialScatterChart("Task 2: every trial", studies))
""")

write()
