package nn

import (
	"fmt"
	"math"

	"github.com/gomase/gomase/mase/limits"
)

// Validate methods of the basic leaves, which DecodeModule runs on a
// configuration read from a file (a MaseGraph checkpoint's replaced
// modules) before the module's parameters are created: every size within
// limits.ModuleDim, probabilities in [0, 1), eps positive and finite. The
// constructors are unchecked: code that builds a module means its sizes.

// Validate implements Validator: in_features and out_features within
// limits.ModuleDim.
func (l *Linear) Validate() error {
	return checkDims("Linear", []string{"in_features", "out_features"}, l.InFeatures, l.OutFeatures)
}

// Validate implements Validator: both sizes within limits.ModuleDim and
// padding_idx -1 (none) or a row.
func (e *Embedding) Validate() error {
	if err := checkDims("Embedding", []string{"num_embeddings", "embedding_dim"}, e.NumEmbeddings, e.EmbeddingDim); err != nil {
		return err
	}
	if e.PaddingIdx < -1 || e.PaddingIdx >= e.NumEmbeddings {
		return fmt.Errorf("Embedding: padding_idx %d is out of range (allowed: -1 for none, or 0 to %d)", e.PaddingIdx, e.NumEmbeddings-1)
	}
	return nil
}

// Validate implements Validator: the normalised dimension within
// limits.ModuleDim, eps positive and finite.
func (l *LayerNorm) Validate() error {
	if err := checkDims("LayerNorm", []string{"normalized_shape"}, l.Dim); err != nil {
		return err
	}
	if err := limits.PositiveFinite("eps", l.Eps); err != nil {
		return fmt.Errorf("LayerNorm: %w", err)
	}
	return nil
}

// Validate implements Validator: p in [0, 1).
func (d *Dropout) Validate() error {
	if err := limits.Probability("p", d.P); err != nil {
		return fmt.Errorf("Dropout: %w", err)
	}
	return nil
}

// Validate implements Validator: sizes and rank within limits.ModuleDim,
// alpha finite, dropout in [0, 1).
func (l *LoRALinear) Validate() error {
	if err := checkDims("LoRALinear", []string{"in_features", "out_features", "rank"}, l.InFeatures, l.OutFeatures, l.Rank); err != nil {
		return err
	}
	if math.IsNaN(l.Alpha) || math.IsInf(l.Alpha, 0) {
		return fmt.Errorf("LoRALinear: alpha %v is not a finite number", l.Alpha)
	}
	if err := limits.Probability("dropout", l.Dropout); err != nil {
		return fmt.Errorf("LoRALinear: %w", err)
	}
	return nil
}

// checkDims checks sizes named names against limits.ModuleDim.
func checkDims(kind string, names []string, dims ...int) error {
	for i, d := range dims {
		if err := limits.ModuleDim.CheckAs(names[i], d); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
	}
	return nil
}
