from nbgen import code, md, write

md(r"""
# Lab 0 · Tutorial 2 — fine-tuning bert-tiny on IMDb: full SFT, then LoRA

MASE's Tutorial 2 (`tutorial_2_lora_finetune`) in Go. The steps: load and tokenise IMDb, trace bert-tiny with
`input_ids`, `attention_mask` and `labels`, look at the trainable parameters, evaluate the untrained model, fine-tune it for
one epoch (SFT), then insert LoRA adapters, train them, fuse them back into the weights, and check that fusing leaves the
accuracy unchanged. Each stage saves a checkpoint, as the lab chains `~/tutorial_2_sft` → `~/tutorial_2_lora`.

| MASE (Python) | gomase (Go) |
|---|---|
| `get_tokenized_dataset("imdb", checkpoint)` | `data.LoadIMDb(...)`, `tokenizer.BertBaseUncased()`, `data.Pretokenize` |
| `MaseGraph(model, hf_input_names=["input_ids", "attention_mask", "labels"])` | `mase.NewMaseGraph(model, []string{"input_ids", "attention_mask", "labels"})` |
| `report_trainable_parameters_analysis_pass(mg.model)` | `passes.ReportTrainableParameters(mg)` |
| `get_trainer(...)`, `trainer.evaluate()`, `trainer.train()` | `train.New(mg, cfg)`, `tr.Evaluate(...)`, `tr.Train(...)` |
| `insert_lora_adapter_transform_pass(mg, {"rank": 6, "alpha": 1.0, "dropout": 0.5})` | `passes.InsertLoRA(mg, passes.LoRAArgs{Rank: 6, Alpha: 1, Dropout: 0.5})` |
| `fuse_lora_weights_transform_pass(mg)` | `passes.FuseLoRA(mg)` |
| `mg.export("~/tutorial_2_sft")` / `MaseGraph.from_checkpoint(...)` | `checkpoint.Export(path, mg, spec)` / `checkpoint.Import(path)` |

**Pretrained or not.** MASE starts from `prajjwal1/bert-tiny`'s pretrained weights (HF's learning rate 5e-5, no warm-up)
and reaches about 0.82 on IMDb after one epoch. This notebook does the same when those weights can be had: from a
HuggingFace cache (the one `transformers` fills, or `bin/mase train --pretrained prajjwal1/bert-tiny` on a machine with
internet) or downloaded from the hub. Otherwise bert-tiny starts from a seeded random initialisation; 5e-5 barely moves a
random model in one epoch, so that start trains at 1e-3 with 10% warm-up (`finetune.FromScratch()`), and its accuracies
are those of a model trained from scratch, not comparable to 0.82. The SFT cell says which start it took.

**Scale** (`mase labs --scale`, or `make labs QUICK=1` / `FULL=1`). The *standard* scale, the default without a GPU,
trains on 4,000 SST-2 sentences (short movie-review snippets, GLUE's sentiment task) and evaluates on its 872 test
sentences, cut to 64 tokens: a model trained from scratch learns nothing measurable from a few hundred IMDb reviews in a few
minutes, but does from a few thousand short sentences. The *quick* scale (CI) uses 2,000 of those sentences. The *full*
scale, the default on a GPU, is the lab's: all 25,000 + 25,000 IMDb reviews at MASE's 512 tokens (well over an hour per epoch
on two CPU cores).
""")

code(r"""
import (
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/finetune"
	"github.com/gomase/gomase/mase/labsetup"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/tokenizer"
	"github.com/gomase/gomase/mase/train"
	"github.com/gomase/gomase/mase/ui/display"
	"github.com/gomase/gomase/mase/ui/draw"
	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/progress"
	"github.com/gomase/gomase/mase/ui/widget"
)


func must(err error) {
	if err != nil {
		panic(err)
	}
}

// settings are the fine-tuning settings of this notebook's scale (labsetup.Options): SST-2 sentences at 64 tokens at
// quick and standard scale, IMDb at 512 tokens at full scale.
func settings() finetune.Options { return labsetup.Options() }

// splits loads and pretokenises the training and test splits.
func splits() (trainData, testData *data.Pretokenized, trainN, testN int) {
	trainSplit, testSplit, err := finetune.LoadSplits(settings())
	must(err)
	tok, err := tokenizer.BertBaseUncased()
	must(err)
	return data.Pretokenize(trainSplit.Examples, tok), data.Pretokenize(testSplit.Examples, tok), trainSplit.Len(), testSplit.Len()
}

// batchOpts are the batching options: batch 8 for training, truncation, padding to a few lengths
// (evaluation batches are larger on a GPU).
func batchOpts(shuffle bool) data.BatchOptions {
	trainOpts, evalOpts, err := finetune.Batching(settings(), 8)
	must(err)
	if shuffle {
		return trainOpts
	}
	return evalOpts
}

// ckpt is where the stages save their MaseGraphs (MASE: ~/tutorial_2_sft, ...): ~/gomase-labs, in a folder per scale
// below full scale.
func ckpt(name string) string {
	base, err := labsetup.Checkpoint(name)
	must(err)
	return base
}

// fineTune trains mg for one epoch and shows the loss curve; it returns the accuracy before and after.
func fineTune(mg *mase.MaseGraph, title string, cfg train.Config) (before, after train.Metrics) {
	trainData, testData, _, _ := splits()
	tr, err := train.New(mg, cfg)
	must(err)
	before, err = tr.Evaluate(finetune.EpochBatches(testData, batchOpts(false))(0))
	must(err)
	steps := data.NumBatches(trainData.Len(), cfg.BatchSize, false)
	h, err := tr.Train(finetune.EpochBatches(trainData, batchOpts(true)), steps, &progress.Notebook{Title: title})
	must(err)
	after, err = tr.Evaluate(finetune.EpochBatches(testData, batchOpts(false))(0))
	must(err)
	loss, err := widget.LineChart(progress.LossChart(title, h))
	must(err)
	widget.Show(loss)
	fmt.Printf("%d steps in %.1f s (%.1f samples/s)\n", h.Steps, h.Seconds, float64(h.Examples)/h.Seconds)
	return before, after
}

// trainConfig is the training setting of the notebook's start (labsetup.StartModel): HF's defaults from the pretrained
// weights, finetune.FromScratch from a random initialisation; both log more often below full scale.
func trainConfig() train.Config {
	_, cfg, _, err := labsetup.StartModel()
	must(err)
	return cfg
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

var _ = strings.Join
""")

md(r"""
## 1. The dataset

IMDb: 25,000 training and 25,000 test reviews, half positive, half negative; the lab evaluates on the test split. The loader
reads the official Stanford distribution (`aclImdb_v1.tar.gz`, or an extracted `aclImdb/`) from the project's data directory.
Reviews are tokenised with the bert-base-uncased WordPiece vocabulary and truncated to 512 tokens; each batch is padded to
its longest review (HF's `DataCollatorWithPadding`), rounded up to a multiple of 32 so that the compiled training step is
built for few distinct shapes.
""")

code(r"""
%%
trainData, testData, trainN, testN := splits()
fmt.Printf("dataset %s: %d training and %d test examples (%s)\n", settings().Dataset, trainN, testN, labsetup.Scale().Describe())
long := 0
for i := 0; i < trainData.Len(); i++ {
	if len(trainData.IDs(i)) > settings().MaxLen {
		long++
	}
}
fmt.Printf("%d of %d training examples are longer than %d tokens and get truncated\n", long, trainData.Len(), settings().MaxLen)
fmt.Printf("steps per epoch at batch 8: %d (the full IMDb: %d)\n", data.NumBatches(trainN, 8, false), data.NumBatches(25000, 8, false))
_ = testData
""")

md(r"""
## 2. The graph with and without `attention_mask` and `labels`

Tracing with `hf_input_names=["input_ids", "attention_mask", "labels"]` adds two placeholders: the attention mask feeds the
additive mask of every attention layer, and the labels feed a `CrossEntropyLoss` module (`crossentropyloss_0`) applied to the
logits, so the graph outputs `(loss, logits)`. Traced with `input_ids` only (MASE's default), the model builds its own mask
from a `ones` node of the input's size, has no loss, and outputs the logits alone. Left: `input_ids` only; right: all three
inputs (scroll inside each drawing).
""")

code(r"""
%%
draw := func(inputs []string) string {
	model, err := models.NewBertTiny(labsetup.Seed)
	must(err)
	mg, err := mase.NewMaseGraph(model, inputs)
	must(err)
	fmt.Printf("%v: %s\n", inputs, mg.Summary())
	g, err := draw.Widget(mg)
	must(err)
	g.Title = fmt.Sprintf("inputs %v: %d nodes", inputs, len(mg.Graph.Nodes()))
	return g.HTML()
}
left := draw(nil)
right := draw([]string{"input_ids", "attention_mask", "labels"})
display.HTML(`<table><tr><th>input_ids</th><th>input_ids, attention_mask, labels</th></tr><tr>` +
	`<td style="vertical-align:top"><div style="max-height:700px;overflow:auto">` + left + `</div></td>` +
	`<td style="vertical-align:top"><div style="max-height:700px;overflow:auto">` + right + `</div></td></tr></table>`)
""")

md(r"""
## 3. Trainable parameters

`passes.ReportTrainableParameters` counts, for every module, the trainable and total parameters of its subtree; the first
row is the whole model. bert-tiny has 4,386,178 parameters. MASE's `report_trainable_parameters_analysis_pass` prints
`Total Trainable Parameters: 14480258` here because it adds up every row of its table, counting nested modules several
times; the real count is the first row. The tutorial then freezes `bert.embeddings`: 413,314 parameters remain trainable.
""")

code(r"""
%%
model, err := models.NewBertTiny(labsetup.Seed)
must(err)
mg, err := mase.NewMaseGraph(model, []string{"input_ids", "attention_mask", "labels"})
must(err)
rows, info := passes.ReportTrainableParameters(mg)
for _, r := range rows {
	if strings.Count(r.Module, ".") <= 1 {
		fmt.Printf("%-40s %-32s %10d / %d\n", r.Module, r.Type, r.Trainable, r.Total)
	}
}
fmt.Println("trainable:", info["trainable"], "of", info["total"])
must(train.SetFrozen(mg.Model, []string{"bert.embeddings"}))
fmt.Println("after freezing bert.embeddings:", train.TrainableParameters(mg.Model))
""")

md(r"""
## 4. Baseline and full fine-tuning (SFT)

One epoch of AdamW with a linear schedule, gradient clipping at 1.0 and batches of 8 (HF's Trainer defaults; from a random
initialisation the learning rate and warm-up differ, see above). Every parameter trains here. The loss curve updates live while the cell runs; the final curve
stays in the report. The trained MaseGraph is exported (parameters as safetensors with HuggingFace names, the graph and its
metadata as JSON).
""")

code(r"""
%%
model, cfg, note, err := labsetup.StartModel()
must(err)
fmt.Println(note)
mg, err := mase.NewMaseGraph(model, []string{"input_ids", "attention_mask", "labels"})
must(err)
before, after := fineTune(mg, "SFT: training loss", cfg)
fmt.Printf("accuracy before training: %.4f\n", before.Accuracy)
fmt.Printf("accuracy after one epoch: %.4f\n", after.Accuracy)
must(checkpoint.Export(ckpt("tutorial_2_sft"), mg, checkpoint.Spec{Model: "bert-tiny", Seed: labsetup.Seed}))
fmt.Println("saved", ckpt("tutorial_2_sft"))
""")

md(r"""
## 5. LoRA on the fine-tuned model, then fusing

`InsertLoRA` replaces each of the 14 Linear layers by a `LoRALinear`: the original weight and bias, frozen, plus two small
matrices A (rank × in, random) and B (out × rank, **zero**), so the model's outputs do not change until B trains; the output
is `x Wᵀ + b + (α/r)·x Aᵀ Bᵀ`. Everything else is frozen too, so only A and B train (29,964 parameters at rank 6).

Where gomase differs from MASE's pass, on purpose (see docs/lab0.md): MASE reads `lora_alpha`/`lora_dropout` and silently
ignores the tutorial's `alpha`/`dropout` keys; it initialises B randomly (so inserting the adapters changes the outputs), keeps
the base weights trainable, and drops every bias. gomase honours the keys, zero-initialises B, freezes the base and keeps
the biases.

`FuseLoRA` folds each adapter back: `W' = W + (α/r)·B·A`, giving plain Linear layers with the same outputs — the accuracy
before and after fusing is identical.
""")

code(r"""
%%
mg, err := checkpoint.Import(ckpt("tutorial_2_sft"))
must(err)
mg, info, err := passes.InsertLoRA(mg, passes.LoRAArgs{Rank: 6, Alpha: 1.0, Dropout: 0.5, Seed: labsetup.Seed})
must(err)
fmt.Println("LoRA adapters on", len(info["replaced"].([]string)), "Linear layers")
_, counts := passes.ReportTrainableParameters(mg)
fmt.Println("trainable:", counts["trainable"], "of", counts["total"])
cfg := trainConfig()
before, after := fineTune(mg, "LoRA: training loss", cfg)
fmt.Printf("accuracy of the SFT model:       %.4f\n", before.Accuracy)
fmt.Printf("accuracy after one LoRA epoch:   %.4f\n", after.Accuracy)

_, testData, _, _ := splits()
var probe train.Batch
for b, err := range finetune.EpochBatches(testData, batchOpts(false))(0) {
	must(err)
	probe = b
	break
}
unfusedOut, err := execute.Run(mg, probe)
must(err)
mg, _, err = passes.FuseLoRA(mg)
must(err)
fusedOut, err := execute.Run(mg, probe)
must(err)
a, b := unfusedOut[1].Value().([][]float32), fusedOut[1].Value().([][]float32)
maxDiff := 0.0
for i := range a {
	for j := range a[i] {
		maxDiff = max(maxDiff, float64(abs32(a[i][j]-b[i][j])))
	}
}
fmt.Printf("largest logit change from fusing (one test batch): %.2g\n", maxDiff)
tr, err := train.New(mg, cfg)
must(err)
fused, err := tr.Evaluate(finetune.EpochBatches(testData, batchOpts(false))(0))
must(err)
fmt.Printf("accuracy after fusing:           %.4f (identical: %v)\n", fused.Accuracy, fused.Accuracy == after.Accuracy)
must(checkpoint.Export(ckpt("tutorial_2_lora"), mg, checkpoint.Spec{Model: "bert-tiny", Seed: labsetup.Seed}))
fmt.Println("saved", ckpt("tutorial_2_lora"))
""")

write()
