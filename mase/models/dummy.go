package models

import (
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/tokenizer"
)

// DummySentences are the two sentences of MASE's HF dummy input
// (chop.tools.get_hf_dummy_in and Tutorial 1).
var DummySentences = []string{"AI may take over the world one day", "This is why you should learn ADLS"}

// DummyLabels are the labels get_hf_dummy_in adds when labels are traced.
var DummyLabels = []int32{1, 0}

// DummyInput returns the dummy input MASE would use for the model's traced
// inputs: for BERT the two dummy sentences tokenised with bert-base-uncased
// (attention_mask of ones, int32 like HF's long mask, labels [1, 0]); for the MLP a seeded N(0,1)
// tensor of shape [1, 2, 2] (the hardware lab's torch.randn((1, 2, 2))); for
// ResNet one seeded N(0,1) ImageNet-shaped image x [1, 3, 224, 224]
// (torch.randn(1, 3, 224, 224), the usual dummy of torchvision models).
func DummyInput(m *nn.Model, inputNames []string, seed uint64) (map[string]*tensors.Tensor, error) {
	switch root := m.Root.(type) {
	case *BertForSequenceClassification:
		tok, err := tokenizer.BertBaseUncased()
		if err != nil {
			return nil, fmt.Errorf("dummy input: %w", err)
		}
		return HFDummyInput(tok, inputNames)
	case *MLP:
		rng := rand.New(rand.NewPCG(seed, seed+1))
		x := make([]float32, 4)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(x, 1, 2, 2)}, nil
	case *ResNet:
		return map[string]*tensors.Tensor{"x": RandomImages(seed, 1, 224, 224)}, nil
	default:
		return nil, fmt.Errorf("no dummy input known for model %s", root.TypeName())
	}
}

// HFDummyInput tokenises DummySentences (padded to the longest) and returns
// the tensors for the named inputs (input_ids, attention_mask, labels).
func HFDummyInput(tok *tokenizer.Tokenizer, inputNames []string) (map[string]*tensors.Tensor, error) {
	batch, err := tok.EncodeBatch(DummySentences, tokenizer.EncodeOptions{Truncation: true, Padding: tokenizer.PadLongest})
	if err != nil {
		return nil, fmt.Errorf("dummy input: %w", err)
	}
	out := map[string]*tensors.Tensor{}
	for _, name := range inputNames {
		switch name {
		case "input_ids":
			out[name] = tensors.FromValue(batch.InputIDs)
		case "attention_mask":
			out[name] = tensors.FromValue(batch.AttentionMask)
		case "labels":
			out[name] = tensors.FromValue(append([]int32{}, DummyLabels...))
		default:
			return nil, fmt.Errorf("dummy input: unknown input %q (allowed: input_ids, attention_mask, labels)", name)
		}
	}
	return out, nil
}

// RandomImages returns a seeded N(0,1) batch of RGB images [n, 3, h, w]
// (float32), the input of ResNet's dummy and tests.
func RandomImages(seed uint64, n, h, w int) *tensors.Tensor {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	x := make([]float32, n*3*h*w)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(x, n, 3, h, w)
}
