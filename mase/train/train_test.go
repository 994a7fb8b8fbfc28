package train

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
)

func TestLearningRateSchedule(t *testing.T) {
	c := DefaultConfig()
	if lr := c.LearningRateAt(500, 3125); math.Abs(lr-4.2e-5) > 1e-12 {
		t.Errorf("lr at step 500 of 3125 = %g, want 4.2e-5 (HF's log)", lr)
	}
	if lr := c.LearningRateAt(0, 3125); lr != 5e-5 {
		t.Errorf("first step lr %g", lr)
	}
	c.WarmupSteps = 10
	if lr := c.LearningRateAt(5, 110); math.Abs(lr-2.5e-5) > 1e-12 {
		t.Errorf("warm-up lr %g", lr)
	}
	if lr := c.LearningRateAt(60, 110); math.Abs(lr-2.5e-5) > 1e-12 {
		t.Errorf("decay lr %g", lr)
	}
	c.WarmupSteps, c.WarmupRatio = 0, 0.1
	if w := c.warmup(3125); w != 313 {
		t.Errorf("warm-up ratio 0.1 of 3125 = %d steps, want 313 (rounded up)", w)
	}
	c.Schedule = Constant
	if lr := c.LearningRateAt(3000, 3125); lr != 5e-5 {
		t.Errorf("constant lr %g", lr)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.LearningRate = 0 }, "learning_rate"},
		{func(c *Config) { c.Schedule = "cosine" }, "allowed: linear, constant"},
		{func(c *Config) { c.BatchSize = 0 }, "batch size"},
		{func(c *Config) { c.Beta2 = 1 }, "betas"},
		{func(c *Config) { c.WarmupRatio = 1.5 }, "warm-up"},
		{func(c *Config) { c.Epochs = 1 << 40 }, "num_train_epochs 1099511627776 is out of range (allowed: 1 to 1048576)"},
		{func(c *Config) { c.BatchSize = 1 << 30 }, "batch size 1073741824 is out of range (allowed: 1 to 65536)"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// toyTask: label 1 when token 7 occurs in the sequence. A tiny BERT learns it.
func toyBatches(seed uint64, n, batch, seq int) []Batch {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []Batch
	for b := 0; b < n; b++ {
		ids := make([]int32, batch*seq)
		mask := make([]int32, batch*seq)
		labels := make([]int32, batch)
		for i := 0; i < batch; i++ {
			labels[i] = int32(rng.IntN(2))
			for j := 0; j < seq; j++ {
				tok := int32(10 + rng.IntN(40))
				ids[i*seq+j] = tok
				mask[i*seq+j] = 1
			}
			if labels[i] == 1 {
				ids[i*seq+1+rng.IntN(seq-1)] = 7
			}
			ids[i*seq] = 2
		}
		out = append(out, Batch{
			"input_ids":      tensors.FromFlatDataAndDimensions(ids, batch, seq),
			"attention_mask": tensors.FromFlatDataAndDimensions(mask, batch, seq),
			"labels":         tensors.FromFlatDataAndDimensions(labels, batch),
		})
	}
	return out
}

func seqOf(bs []Batch) Batches {
	return func(yield func(Batch, error) bool) {
		for _, b := range bs {
			if !yield(b, nil) {
				return
			}
		}
	}
}

func tinyBert(t *testing.T) *ir.MaseGraph {
	t.Helper()
	return tinyBertWith(t, 3, nil)
}

// tinyBertWith is a one-layer BERT of hidden size 32 over 64 tokens, seeded
// with seed, its config changed by mod (when not nil), traced with labels.
func tinyBertWith(t *testing.T, seed uint64, mod func(*models.BertConfig)) *ir.MaseGraph {
	t.Helper()
	cfg := models.BertTinyConfig()
	cfg.VocabSize, cfg.HiddenSize, cfg.NumHiddenLayers, cfg.IntermediateSize, cfg.MaxPositionEmbeddings = 64, 32, 1, 64, 16
	if mod != nil {
		mod(&cfg)
	}
	m, err := models.NewBertForSequenceClassification(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, []string{"input_ids", "attention_mask", "labels"})
	if err != nil {
		t.Fatal(err)
	}
	return mg
}

func TestTrainingLearnsAndFreezes(t *testing.T) {
	mg := tinyBert(t)
	cfg := DefaultConfig()
	cfg.LearningRate, cfg.Epochs, cfg.LogEvery = 3e-3, 3, 20
	cfg.Freeze = []string{"bert.embeddings.position_embeddings"}
	tr, err := New(mg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	train, test := toyBatches(1, 40, 8, 8), toyBatches(2, 20, 8, 8)
	before, err := tr.Evaluate(seqOf(test))
	if err != nil {
		t.Fatal(err)
	}
	frozenBefore, _, _ := mg.Model.ParamValues("bert.embeddings.position_embeddings.weight")
	trainedBefore, _, _ := mg.Model.ParamValues("classifier.weight")
	h, err := tr.Train(func(int) Batches { return seqOf(train) }, len(train), nil)
	if err != nil {
		t.Fatal(err)
	}
	after, err := tr.Evaluate(seqOf(test))
	if err != nil {
		t.Fatal(err)
	}
	if h.Steps != 120 || len(h.Log) != 6 || h.Examples != 960 {
		t.Errorf("history: %d steps, %d logs, %d examples", h.Steps, len(h.Log), h.Examples)
	}
	t.Logf("accuracy %.3f → %.3f, loss log %+v", before.Accuracy, after.Accuracy, h.Log)
	if !(after.Accuracy >= before.Accuracy+0.2 && after.Accuracy >= 0.85) {
		t.Errorf("accuracy %.3f → %.3f: the toy task was not learnt", before.Accuracy, after.Accuracy)
	}
	if h.Log[len(h.Log)-1].Loss >= h.Log[0].Loss {
		t.Errorf("loss did not fall: %+v", h.Log)
	}
	frozenAfter, _, _ := mg.Model.ParamValues("bert.embeddings.position_embeddings.weight")
	trainedAfter, _, _ := mg.Model.ParamValues("classifier.weight")
	if !slices.Equal(frozenBefore, frozenAfter) {
		t.Error("a frozen parameter changed")
	}
	if slices.Equal(trainedBefore, trainedAfter) {
		t.Error("a trainable parameter did not change")
	}
	// Evaluating through a fresh compilation of the graph sees the trained weights.
	out, err := execute.Run(mg, test[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatal("want (loss, logits)")
	}
}

func TestTrainerErrors(t *testing.T) {
	m, _ := models.NewBertTiny(1)
	noLabels, _ := mase.NewMaseGraph(m, nil)
	if _, err := New(noLabels, DefaultConfig()); err == nil || !strings.Contains(err.Error(), "labels") {
		t.Errorf("graph without labels: %v", err)
	}
	mg := tinyBert(t)
	cfg := DefaultConfig()
	cfg.Freeze = []string{"bert.embedings"}
	if _, err := New(mg, cfg); err == nil || !strings.Contains(err.Error(), `no module "bert.embedings"`) {
		t.Errorf("bad freeze prefix: %v", err)
	}
	if err := SetFrozen(mg.Model, []string{"bert.embeddings"}); err != nil {
		t.Fatal(err)
	}
	// bert-tiny with frozen embeddings: spec §1.1's 413,314 trainable.
	if err := SetFrozen(m, []string{"bert.embeddings"}); err != nil {
		t.Fatal(err)
	}
	if n := TrainableParameters(m); n != 413314 {
		t.Errorf("trainable after freezing embeddings = %d, want 413,314", n)
	}
}
