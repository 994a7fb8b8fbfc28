package train

import (
	"os"

	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/models"
)

// BenchmarkBertTinyTrainStep times one full training step of bert-tiny
// (train-mode forward, cross-entropy, backward, clipping, AdamW) at batch 8
// × 128 tokens — the step ../shared/bench/torch_peer.py times in PyTorch.
// It reports samples/s and tokens/s.
func BenchmarkBertTinyTrainStep(b *testing.B) { benchTrainStep(b, nil) }

// BenchmarkBertTinyTrainStepFrozenEmbeddings is the same step with
// bert.embeddings frozen (Tutorial 2's setting): no gradient, clipping or
// AdamW work on the 3.9M-entry embedding tables.
func BenchmarkBertTinyTrainStepFrozenEmbeddings(b *testing.B) {
	benchTrainStep(b, []string{"bert.embeddings"})
}

// BenchmarkBertTinyTrainStepAllRowsLive is BenchmarkBertTinyTrainStep
// after warm-up steps that look up every row of the vocabulary: the
// optimizer then updates the whole word-embedding table at each step (it
// skips the rows never looked up, whose update is zero without weight
// decay), as it does late in a real fine-tuning run.
func BenchmarkBertTinyTrainStepAllRowsLive(b *testing.B) { benchTrainStepWarm(b, nil, true) }

func benchTrainStep(b *testing.B, freeze []string) { benchTrainStepWarm(b, freeze, false) }

// The benchmarks' batch: 8 sequences of 128 tokens.
const benchBatch, benchSeq = 8, 128

// benchTrainer returns a trainer of bert-tiny traced with labels, with
// cfg, and the benchmarks' batch.
func benchTrainer(b *testing.B, cfg Config) (*Trainer, Batch) {
	m, err := models.NewBertTiny(1)
	if err != nil {
		b.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, []string{"input_ids", "attention_mask", "labels"})
	if err != nil {
		b.Fatal(err)
	}
	tr, err := New(mg, cfg)
	if err != nil {
		b.Fatal(err)
	}
	ids, mask := make([]int32, benchBatch*benchSeq), make([]int32, benchBatch*benchSeq)
	for i := range ids {
		ids[i], mask[i] = int32(1000+(i*7919)%29000), 1
	}
	return tr, Batch{"input_ids": tensors.FromFlatDataAndDimensions(ids, benchBatch, benchSeq),
		"attention_mask": tensors.FromFlatDataAndDimensions(mask, benchBatch, benchSeq),
		"labels":         tensors.FromFlatDataAndDimensions([]int32{0, 1, 1, 0, 1, 0, 0, 1}, benchBatch)}
}

func benchTrainStepWarm(b *testing.B, freeze []string, allRows bool) {
	cfg := DefaultConfig()
	cfg.Freeze = freeze
	tr, in := benchTrainer(b, cfg)
	defer tr.Close()
	const batch, seq = benchBatch, benchSeq
	if _, _, err := tr.Step(in, 5e-5); err != nil { // compile outside the timing
		b.Fatal(err)
	}
	if allRows {
		vocab := models.BertTinyConfig().VocabSize
		warm := make([]int32, batch*seq)
		for start := 0; start < vocab; start += len(warm) {
			for i := range warm {
				warm[i] = int32((start + i) % vocab)
			}
			wb := Batch{"input_ids": tensors.FromFlatDataAndDimensions(warm, batch, seq),
				"attention_mask": in["attention_mask"], "labels": in["labels"]}
			if _, _, err := tr.Step(wb, 5e-5); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := tr.Step(in, 5e-5); err != nil {
			b.Fatal(err)
		}
	}
	perStep := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(batch/perStep, "samples/s")
	b.ReportMetric(batch*seq/perStep, "tokens/s")
}

// BenchmarkBertTinyTrain runs Train for b.N steps of bert-tiny at batch 8
// × 128 tokens with the backend's trainer (TrainerFor; GOMASE_TRAINER
// forces fused or graph): unlike BenchmarkBertTinyTrainStep it reads the
// loss back only as Train does (every 250 ms and at the end), so on a GPU
// the steps queue up as in a real epoch. It reports samples/s without
// the compile.
func BenchmarkBertTinyTrain(b *testing.B) {
	cfg := DefaultConfig()
	cfg.LogEvery, cfg.Trainer = 0, os.Getenv("GOMASE_TRAINER")
	tr, in := benchTrainer(b, cfg)
	defer tr.Close()
	steps := func(n int) Batches {
		return func(yield func(Batch, error) bool) {
			for range n {
				if !yield(in, nil) {
					return
				}
			}
		}
	}
	if _, err := tr.Train(func(int) Batches { return steps(3) }, 3, nil); err != nil { // compile outside the timing
		b.Fatal(err)
	}
	b.ResetTimer()
	h, err := tr.Train(func(int) Batches { return steps(b.N) }, b.N, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(benchBatch*b.N)/h.Seconds, "samples/s")
	b.ReportMetric(float64(h.Compiles), "compiles")
	b.Logf("%s trainer, %d steps in %.2f s", tr.Kind(), h.Steps, h.Seconds)
}
