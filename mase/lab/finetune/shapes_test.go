package finetune

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/train"
)

// spreadEncoder encodes a text of n bytes as [CLS], n tokens, [SEP] with
// ids inside a small vocabulary.
type spreadEncoder struct{}

func (spreadEncoder) Encode(text string) []int32 {
	ids := []int32{2}
	for i := range len(text) {
		ids = append(ids, int32(4+(i*7+len(text))%60))
	}
	return append(ids, 3)
}

// imdbShaped returns n examples whose lengths spread over 1..600 tokens
// (IMDb's reviews run past 512).
func imdbShaped(n int, seed uint64) []data.Example {
	rng := rand.New(rand.NewPCG(seed, 1))
	ex := make([]data.Example, n)
	for i := range ex {
		b := make([]byte, 1+rng.IntN(600))
		for j := range b {
			b[j] = 'a'
		}
		ex[i] = data.Example{Text: string(b), Label: rng.IntN(2)}
	}
	return ex
}

// TestCompiledShapesBoundCompiles: an IMDb-shaped epoch at 512 tokens with
// XLA's batch shapes (length buckets of 64, fixed-size batches, evaluation
// in batches of 64) compiles at most 8 training and 8 evaluation
// executables, and the padding rows count neither as examples nor in the
// metrics.
func TestCompiledShapesBoundCompiles(t *testing.T) {
	cfg := models.BertTinyConfig()
	cfg.VocabSize, cfg.HiddenSize, cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.IntermediateSize = 64, 8, 1, 1, 16
	m, err := models.NewBertForSequenceClassification(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, []string{"input_ids", "attention_mask", "labels"})
	if err != nil {
		t.Fatal(err)
	}
	tc := train.DefaultConfig()
	tc.LogEvery = 0
	tr, err := train.New(mg, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	trainData := data.Pretokenize(imdbShaped(65, 1), spreadEncoder{})
	evalData := data.Pretokenize(imdbShaped(200, 2), spreadEncoder{})
	trainOpts, evalOpts, err := BatchingFor(Options{MaxLen: 512, Seed: 1}, 8, train.CompiledShapes)
	if err != nil {
		t.Fatal(err)
	}
	steps := data.NumBatches(trainData.Len(), 8, false)
	h, err := tr.Train(EpochBatches(trainData, trainOpts), steps, nil)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := tr.Evaluate(EpochBatches(evalData, evalOpts)(0))
	if err != nil {
		t.Fatal(err)
	}
	training, evaluation := tr.Compiles()
	t.Logf("training: %d compiles (%.2f s), evaluation: %d compiles (%.2f s)", training.Count, training.Seconds, evaluation.Count, evaluation.Seconds)
	if training.Count > 8 || evaluation.Count > 8 {
		t.Errorf("%d training and %d evaluation compiles, want at most 8 + 8", training.Count, evaluation.Count)
	}
	if training.Count < 2 || evaluation.Count < 3 {
		t.Errorf("%d training and %d evaluation compiles: the lengths did not spread over the buckets", training.Count, evaluation.Count)
	}
	if h.Examples != 65 || m2.Examples != 200 || h.Compiles != training.Count {
		t.Errorf("%d training and %d evaluation examples (want 65 and 200: padding rows do not count); history compiles %d", h.Examples, m2.Examples, h.Compiles)
	}
	// The compile log names each executable's shapes once; every other
	// step found its executable compiled.
	trainLog, evalLog := tr.CompileLog()
	if len(trainLog) != training.Count || len(evalLog) != evaluation.Count {
		t.Fatalf("compile logs of %d and %d entries for %d and %d compiles", len(trainLog), len(evalLog), training.Count, evaluation.Count)
	}
	seen := map[string]bool{}
	for _, e := range trainLog {
		if seen[e.Shapes] || !strings.HasPrefix(e.Shapes, "(Int32)[8, ") || e.Seconds <= 0 {
			t.Errorf("training compile %+v: want distinct shapes of batch 8 and a time", e)
		}
		seen[e.Shapes] = true
	}
	if training.Hits != steps-training.Count {
		t.Errorf("%d cache hits over %d steps with %d compiles, want %d", training.Hits, steps, training.Count, steps-training.Count)
	}
	// Without fixed-size batches the short last batches add shapes.
	loose := train.CompiledShapes
	loose.FixedBatch = false
	_, evalLoose, err := BatchingFor(Options{MaxLen: 512}, 8, loose)
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[[2]int]bool{}
	for b, err := range EpochBatches(evalData, evalLoose)(0) {
		if err != nil {
			t.Fatal(err)
		}
		d := b["input_ids"].Shape().Dimensions
		shapes[[2]int{d[0], d[1]}] = true
	}
	if len(shapes) <= evaluation.Count {
		t.Errorf("without fixed-size batches %d shapes, with them %d: the test does not exercise batch padding", len(shapes), evaluation.Count)
	}
}
