package mase

import (
	"fmt"
	"io"

	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/pretrained"
)

// FromPretrained is AutoModelForSequenceClassification.from_pretrained for
// BERT checkpoints: id is a hub repository ("prajjwal1/bert-tiny") or a
// local folder, found as package pretrained says (folder, Hugging Face
// cache, download). transformers' warnings about weights that were not
// used or newly initialised go to warn (nil: dropped). For labels, seeds,
// the tokenizer and hub options use pretrained.Load.
func FromPretrained(id string, warn io.Writer) (*nn.Model, error) {
	m, err := pretrained.Load(id, pretrained.Options{})
	if err != nil {
		return nil, err
	}
	if warn != nil {
		for _, w := range m.Warnings() {
			fmt.Fprintln(warn, w)
		}
	}
	return m.Model, nil
}
