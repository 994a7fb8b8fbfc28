// Package workmem estimates, before anything is allocated, the working
// memory of gomase's heavy commands: a BERT or ResNet forward (mase
// profile, mase bench compile) and BERT fine-tuning (mase train, the NAS
// trials). Each estimate is an honest over-estimate, counted from the
// model's config and the run's sizes with overflow checks
// (limits.Estimate), and limits.Estimate.Check holds it against
// limits.MaxModelBytes (the model's state) and the memory available (the
// smallest of MemAvailable, the cgroup limit, RLIMIT_AS and RLIMIT_DATA).
//
// The formulas, with n = batch × seq tokens, h = hidden_size,
// I = intermediate_size, H = num_attention_heads, L = num_hidden_layers,
// P the model's parameters and T those that train:
//
//	BERT forward   4 bytes × [ (6 + 20L)·n·h + 2L·n·I + 3·batch·H·seq²
//	               + 4·batch·h + 2·batch·labels + 8n ]
//	               + weights 4P × WeightCopies
//
// counts every node's output of the traced graph held at once, as the
// metadata pass of mase profile holds them (Where.HoldsAll; without it
// outputs are freed after their last use and one layer counts: L = 1 in
// the layer terms): 6 hidden-sized outputs in the embeddings, 20 a layer
// (Q, K, V and their head views, the attention, the output dense, dropout,
// residual and LayerNorm, twice) and 2 intermediate-sized; the attention's
// own scores, scaled scores and probabilities, one layer at a time; the
// pooler and classifier; the ids, the mask and their copies.
//
//	BERT training  4 bytes × [ L·(24·n·h + 3·n·I + 4·batch·H·seq²)
//	               + one more layer of that (the backward's working set)
//	               + 8·n·h + 4·batch·h + LoRA's outputs + 8n ]
//	               + weights 4P × WeightCopies + gradients 4T + AdamW 8T
//
// counts the forward outputs the backward keeps, with the dropout masks and
// the attention probabilities; each LoRA adapter of rank r on a Linear
// in → out adds r·(in + out) trainable parameters and n·(r + 3·out)
// outputs. Evaluation at its own batch is a forward; the larger counts.
//
//	ResNet forward 4 bytes × batch × [ 2·3·S² + 5·64·s1² + 64·s2²
//	               + Σ blocks 7 (9 with a downsample)·c·t²
//	               + 3·512 + classes ] + weights 4P × WeightCopies
//
// counts the images and their copy, the stem's conv, BatchNorm and ReLU
// at s1 = ⌈S/2⌉ with two temporaries inside an op, the max-pool at
// s2 = ⌈s1/2⌉, every block's outputs at its stage's c channels and t × t
// (without HoldsAll only the largest block's), and the head.
//
// The total is then multiplied by Copies: Go's collector lets the heap
// grow to twice the live data (GOGC=100) before it collects. The model's
// state (its weights once, and in training the gradients and moments) is
// what limits.MaxModelBytes bounds. On an XLA backend the activations
// live in the accelerator's memory, which a host check cannot see:
// Where.OnDevice leaves them out and counts what the host holds. The
// datasets are not counted (their readers bound them).
package workmem

import (
	"fmt"

	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
)

// Copies multiplies every estimate: Go's garbage collector lets the heap
// grow to twice the live data (GOGC=100) before it collects.
const Copies = 2

// float32 is 4 bytes.
const f32 = 4

// Where says where a computation keeps its weights and activations.
type Where struct {
	// WeightCopies is how many copies of the weights are held at once:
	// the host's and one per runner or trainer that uploads them (at
	// least 1).
	WeightCopies int64
	// OnDevice says the activations live in an accelerator's memory (an
	// XLA backend), which the host's bounds do not cover: they are left
	// out.
	OnDevice bool
	// HoldsAll says every node's output is held at once, as the metadata
	// pass that mase profile runs first holds them; otherwise each is
	// freed after its last use and a forward counts one BERT layer, or
	// the ResNet stem and its largest block.
	HoldsAll bool
}

// dims names a config's sizes for overflow messages.
type bertDims struct {
	h, i, heads, layers, labels limits.Dim
}

func bertSizes(c models.BertConfig) bertDims {
	return bertDims{
		h:      limits.Dim{Name: "hidden_size", N: int64(c.HiddenSize)},
		i:      limits.Dim{Name: "intermediate_size", N: int64(c.IntermediateSize)},
		heads:  limits.Dim{Name: "num_attention_heads", N: int64(c.NumAttentionHeads)},
		layers: limits.Dim{Name: "num_hidden_layers", N: int64(c.NumHiddenLayers)},
		labels: limits.Dim{Name: "num_labels", N: int64(c.NumLabels)},
	}
}

// k is an unnamed constant factor.
func k(n int64) limits.Dim { return limits.Dim{N: n} }

// weights counts the model's weights: once as its state, the other
// WeightCopies - 1 as working memory.
func weights(e *limits.Estimate, params int64, w Where) {
	p := limits.Dim{Name: "parameters", N: params}
	e.AddState(f32, p)
	e.Add(f32, p, k(max(w.WeightCopies, 1)-1))
	e.StateWhat = fmt.Sprintf("the weights of %d parameters", params)
}

// BertForward is the working memory of cfg's BertForSequenceClassification
// forward on batch × seq token ids with every node's output held at once
// (the package comment's formula), times Copies.
func BertForward(cfg models.BertConfig, batch, seq limits.Dim, w Where) limits.Estimate {
	var e limits.Estimate
	weights(&e, cfg.NumParameters(), w)
	e.Include(bertForwardActivations(cfg, batch, seq, w))
	e.Times(Copies, "copies")
	return e
}

// bertForwardActivations is BertForward without the weights and Copies.
func bertForwardActivations(cfg models.BertConfig, batch, seq limits.Dim, w Where) limits.Estimate {
	var e limits.Estimate
	d := bertSizes(cfg)
	e.Add(8*4, batch, seq) // ids, mask, their copies (int32)
	if w.OnDevice {
		return e
	}
	layers := k(1)
	if w.HoldsAll {
		layers = d.layers
	}
	e.Add(f32*6, batch, seq, d.h)
	e.Add(f32*20, layers, batch, seq, d.h)
	e.Add(f32*2, layers, batch, seq, d.i)
	e.Add(f32*3, batch, d.heads, seq, seq)
	e.Add(f32*4, batch, d.h)
	e.Add(f32*2, batch, d.labels)
	return e
}

// Training sizes a fine-tuning run.
type Training struct {
	// Batch and Seq are the training batch and the longest sequence (the
	// flags that set them, and their values).
	Batch, Seq limits.Dim
	// EvalBatch is the evaluation batch.
	EvalBatch limits.Dim
	// LoRARank is the adapters' rank; 0 fine-tunes every parameter.
	LoRARank limits.Dim
	// FreezeEmbeddings leaves bert.embeddings out of training.
	FreezeEmbeddings bool
	Where
}

// BertTraining is the working memory of fine-tuning cfg's
// BertForSequenceClassification with AdamW (the package comment's
// formula), times Copies. Every Linear gets an adapter when LoRARank is
// set (passes.InsertLoRA without Match), and only the adapters train.
func BertTraining(cfg models.BertConfig, t Training) limits.Estimate {
	d := bertSizes(cfg)
	params := cfg.NumParameters()
	var e limits.Estimate
	weights(&e, params, t.Where)
	trainable := limits.Dim{Name: "parameters", N: params}
	if t.FreezeEmbeddings {
		trainable.N -= embeddingParameters(cfg)
	}
	var adapters limits.Estimate // LoRA's parameters, and its outputs
	if t.LoRARank.N > 0 {
		r := t.LoRARank
		// Per layer: Q, K, V, attention output (h → h), intermediate
		// (h → I), output (I → h); then the pooler (h → h) and the
		// classifier (h → labels).
		adapters.Add(1, d.layers, r, k(10), d.h)
		adapters.Add(1, d.layers, r, k(2), d.i)
		adapters.Add(1, r, k(3), d.h)
		adapters.Add(1, r, d.labels)
		if adapters.Overflow != "" {
			e.Include(adapters)
			return e
		}
		trainable = limits.Dim{Name: "LoRA parameters", N: adapters.Total}
		e.AddState(f32, trainable)
		e.Add(f32, trainable, k(max(t.WeightCopies, 1)-1))
	}
	e.AddState(f32*3, trainable) // the gradients and AdamW's two moments
	e.StateWhat = fmt.Sprintf("the weights of %d parameters with the gradients and AdamW's two moments of %d", params, trainable.N)
	if !t.OnDevice {
		var act limits.Estimate
		layer := func(layers limits.Dim) {
			act.Add(f32*24, layers, t.Batch, t.Seq, d.h)
			act.Add(f32*3, layers, t.Batch, t.Seq, d.i)
			act.Add(f32*4, layers, t.Batch, d.heads, t.Seq, t.Seq)
		}
		layer(d.layers)
		layer(k(1))
		act.Add(f32*8, t.Batch, t.Seq, d.h)
		act.Add(f32*4, t.Batch, d.h)
		if r := t.LoRARank; r.N > 0 {
			// n·(r + 3·out) per adapter: 6 per layer on every token, the
			// pooler and classifier on one token a sequence.
			act.Add(f32*6, d.layers, t.Batch, t.Seq, r)
			act.Add(f32*3*5, d.layers, t.Batch, t.Seq, d.h)
			act.Add(f32*3, d.layers, t.Batch, t.Seq, d.i)
			act.Add(f32*2, t.Batch, r)
			act.Add(f32*3, t.Batch, d.h)
			act.Add(f32*3, t.Batch, d.labels)
		}
		act.Add(8*4, t.Batch, t.Seq)
		e.Include(limits.Larger(act, bertForwardActivations(cfg, t.EvalBatch, t.Seq, t.Where)))
	} else {
		e.Include(bertForwardActivations(cfg, t.Batch, t.Seq, t.Where))
	}
	e.Times(Copies, "copies")
	return e
}

// embeddingParameters counts bert.embeddings' parameters: the word,
// position and token-type tables and the LayerNorm.
func embeddingParameters(c models.BertConfig) int64 {
	h := int64(c.HiddenSize)
	return (int64(c.VocabSize)+int64(c.MaxPositionEmbeddings)+int64(c.TypeVocabSize))*h + 2*h
}

// ResNetForward is the working memory of cfg's ResNet forward on batch
// images of image × image pixels with every node's output held at once
// (the package comment's formula), times Copies.
func ResNetForward(cfg models.ResNetConfig, batch, image limits.Dim, w Where) limits.Estimate {
	var e limits.Estimate
	weights(&e, cfg.NumParameters(), w)
	var act limits.Estimate
	act.Add(f32*2*3, batch, image, image) // the images and their copy
	if !w.OnDevice {
		s1 := limits.Dim{Name: image.Name, N: (image.N + 1) / 2}
		s2 := limits.Dim{Name: image.Name, N: (s1.N + 1) / 2}
		act.Add(f32*(3+2)*64, batch, s1, s1) // conv1, bn1, relu; two temporaries
		act.Add(f32*64, batch, s2, s2)       // maxpool
		var blocks, largest limits.Estimate
		t := s2
		for stage, n := range cfg.Layers {
			if stage > 0 {
				t.N = (t.N + 1) / 2
			}
			c := k(64 << stage)
			for b := 0; b < n; b++ {
				maps := int64(7) // conv1, bn1, relu, conv2, bn2, add, relu
				if b == 0 && stage > 0 {
					maps += 2 // downsample: conv, BatchNorm
				}
				var one limits.Estimate
				one.Add(f32*maps, batch, c, t, t)
				blocks.Include(one)
				largest = limits.Larger(largest, one)
			}
		}
		if w.HoldsAll {
			act.Include(blocks)
		} else {
			act.Include(largest)
		}
		act.Add(f32*3*512, batch)
		act.Add(f32, batch, limits.Dim{Name: "num_classes", N: int64(cfg.NumClasses)})
	}
	e.Include(act)
	e.Times(Copies, "copies")
	return e
}
