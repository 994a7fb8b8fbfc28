// Package limits holds the bounds gomase's loaders enforce on what they read
// (model config sizes, file sizes, pickle structure, the bytes a model may
// take), in one place so that every loader refuses the same inputs in the
// same words. Errors name the field or file, the value and what is allowed.
// The package imports nothing of gomase.
package limits

import (
	"fmt"
	"math"
	"math/bits"
)

// An Int bounds a positive integer field of a model config: 1 ≤ v ≤ Max.
type Int struct {
	// Name is the field's name in config.json (transformers' name).
	Name string
	// Max is the largest value accepted.
	Max int
}

// The integer fields of a BERT config.json (transformers' BertConfig) and
// the bounds gomase accepts. Each is far above any published BERT (bert-large:
// hidden 1024, intermediate 4096, 24 layers, 16 heads, vocabulary 30522, 512
// positions, 2 token types) and keeps every size product of the model well
// inside int64; MaxModelBytes bounds the model as a whole.
var (
	HiddenSize            = Int{"hidden_size", 1 << 16}
	IntermediateSize      = Int{"intermediate_size", 1 << 18}
	VocabSize             = Int{"vocab_size", 1 << 21}
	NumHiddenLayers       = Int{"num_hidden_layers", 256}
	NumAttentionHeads     = Int{"num_attention_heads", 1024}
	MaxPositionEmbeddings = Int{"max_position_embeddings", 1 << 17}
	TypeVocabSize         = Int{"type_vocab_size", 1 << 10}
	NumLabels             = Int{"num_labels", 1 << 20}
	// LoRARank bounds an adapter's rank (PEFT's r; useful ranks are 4–64,
	// and a rank above a layer's width adds nothing).
	LoRARank = Int{"lora rank", 1 << 16}
	// Epochs bounds num_train_epochs (the step count stays far inside int).
	Epochs = Int{"num_train_epochs", 1 << 20}
	// BatchSize bounds a training or evaluation batch.
	BatchSize = Int{"batch size", 1 << 16}
	// ResNetBlocks bounds each entry of a ResNet config's layers (blocks per
	// stage; ResNet-152 has 36).
	ResNetBlocks = Int{"layers", 64}
	// ModuleDim bounds a size read from a file outside a model config: a
	// replaced module's configuration in a MaseGraph checkpoint (a Linear's
	// features, an Embedding's rows and width, a LayerNorm's dimension, a
	// LoRA rank) and each dimension of a parameter shape the checkpoint
	// lists. It is the largest of the config bounds (VocabSize).
	ModuleDim = Int{"dimension", 1 << 21}
)

// Check returns nil when 1 ≤ v ≤ b.Max, else an error naming the field,
// the value and the range.
func (b Int) Check(v int) error {
	return b.CheckAs(b.Name, v)
}

// CheckAs is Check naming the field name (an element such as "layers[2]").
func (b Int) CheckAs(name string, v int) error {
	if v < 1 || v > b.Max {
		return fmt.Errorf("%s %d is out of range (allowed: 1 to %d)", name, v, b.Max)
	}
	return nil
}

// Probability checks a dropout probability: 0 ≤ p < 1 (PyTorch's
// nn.Dropout refuses p outside [0, 1]; p = 1 would scale by 1/0).
func Probability(name string, p float64) error {
	if !(p >= 0 && p < 1) {
		return fmt.Errorf("%s %v is not a dropout probability (allowed: 0 ≤ p < 1)", name, p)
	}
	return nil
}

// PositiveFinite checks a field such as layer_norm_eps: 0 < v < +Inf.
func PositiveFinite(name string, v float64) error {
	if !(v > 0 && v <= math.MaxFloat64) {
		return fmt.Errorf("%s %v is out of range (allowed: a finite number above 0)", name, v)
	}
	return nil
}

// NonNegativeFinite checks a field such as initializer_range: 0 ≤ v < +Inf.
func NonNegativeFinite(name string, v float64) error {
	if !(v >= 0 && v <= math.MaxFloat64) {
		return fmt.Errorf("%s %v is out of range (allowed: a finite number, 0 or more)", name, v)
	}
	return nil
}

// Mul returns a·b and whether it is exact (no int64 overflow). Negative
// operands are allowed.
func Mul(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	neg := (a < 0) != (b < 0)
	hi, lo := bits.Mul64(abs64(a), abs64(b))
	if hi != 0 || lo > math.MaxInt64+uint64(b2u(neg)) {
		return 0, false
	}
	if neg {
		return int64(-lo), true // -lo wraps to MinInt64 for lo = 2^63
	}
	return int64(lo), true
}

// Add returns a+b and whether it is exact (no int64 overflow).
func Add(a, b int64) (int64, bool) {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		return 0, false
	}
	return s, true
}

// abs64 is |a| as an unsigned number (|MinInt64| = 2^63 included).
func abs64(a int64) uint64 {
	if a < 0 {
		return uint64(-(a + 1)) + 1
	}
	return uint64(a)
}

func b2u(b bool) uint {
	if b {
		return 1
	}
	return 0
}

// Bytes formats a byte count for errors: "8 GiB", "1.5 MiB", "512 bytes".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	f, u := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		f /= unit
		u = s
		if f < unit {
			break
		}
	}
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f %s", f, u)
	}
	return fmt.Sprintf("%.1f %s", f, u)
}
