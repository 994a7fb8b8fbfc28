package finetune

import (
	"fmt"

	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/tokenizer"
)

// CheckTokens refuses, before any training, token ids model cannot embed:
// a truncation length maxLen (0: tokenizer.ModelMaxLength) longer than its position embeddings,
// and an id of any of the sets past its word embeddings. PyTorch raises an
// IndexError there; GoMLX's gather would clamp the index and train on the
// table's last row. A model without BERT's embedding tables passes.
func CheckTokens(model *nn.Model, maxLen int, sets ...*data.Pretokenized) error {
	vocab, positions, ok := models.TokenLimits(model)
	if !ok {
		return nil
	}
	if maxLen == 0 {
		maxLen = tokenizer.ModelMaxLength
	}
	if maxLen > positions {
		return fmt.Errorf("max length %d is longer than the model's %d position embeddings (max_position_embeddings): "+
			"longer sequences cannot be embedded (allowed: a max length of 2 to %d)", maxLen, positions, positions)
	}
	for _, s := range sets {
		if s == nil {
			continue
		}
		if id := s.MaxID(); int(id) >= vocab {
			return fmt.Errorf("token id %d is past the model's vocabulary of %d tokens (vocab_size): the tokenizer's vocabulary "+
				"does not match the model (allowed: ids below %d; use the vocabulary the model was trained with)", id, vocab, vocab)
		}
	}
	return nil
}
