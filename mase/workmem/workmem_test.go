package workmem

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
)

func dim(name string, n int64) limits.Dim { return limits.Dim{Name: name, N: n} }

// bertTinyParams is bert-tiny's parameter count with 2 labels.
const bertTinyParams = 4386178

// TestBertForwardByHand: bert-tiny at batch 8 × 128 tokens, the weights
// on the host and one backend, each term of the formula worked out.
func TestBertForwardByHand(t *testing.T) {
	const n = 8 * 128    // tokens
	acts := int64(32*n + // ids, mask and copies
		4*6*n*128 + // embeddings
		4*20*2*n*128 + // 20 hidden-sized outputs a layer, 2 layers
		4*2*2*n*512 + // 2 intermediate-sized a layer
		4*3*8*2*128*128 + // scores, scaled scores, probabilities
		4*4*8*128 + 4*2*8*2) // pooler, classifier
	if acts != 35700864 {
		t.Fatalf("the hand sum is %d", acts)
	}
	weights := int64(2 * 4 * bertTinyParams)
	e := BertForward(models.BertTinyConfig(), dim("--batch", 8), dim("--seq", 128), Where{WeightCopies: 2, HoldsAll: true})
	if e.Overflow != "" || e.State != 4*bertTinyParams || e.Total != 2*(weights+acts) {
		t.Errorf("got %+v; want state %d, total %d", e, 4*bertTinyParams, 2*(weights+acts))
	}
	// Freed as they go, one layer's outputs count.
	oneLayer := acts - 4*20*n*128 - 4*2*n*512
	if f := BertForward(models.BertTinyConfig(), dim("--batch", 8), dim("--seq", 128), Where{WeightCopies: 2}); f.Total != 2*(weights+oneLayer) {
		t.Errorf("freed as they go: %+v, want total %d", f, 2*(weights+oneLayer))
	}
	// On a device only the ids stay on the host.
	d := BertForward(models.BertTinyConfig(), dim("--batch", 8), dim("--seq", 128), Where{WeightCopies: 2, OnDevice: true, HoldsAll: true})
	if d.Total != 2*(weights+32*n) {
		t.Errorf("on a device: %+v", d)
	}
}

// TestProfileAtTheOldBound: `mase profile --batch 4096 --seq 512` (inside
// the flags' bounds, out of memory before) needs far more than a machine
// of tens of GiB has: every captured output of bert-tiny alone is 62 GiB.
func TestProfileAtTheOldBound(t *testing.T) {
	e := BertForward(models.BertTinyConfig(), dim("--batch", 4096), dim("--seq", 512), Where{WeightCopies: 3, HoldsAll: true})
	if e.Overflow != "" || e.Total < 2*62<<30 {
		t.Errorf("%+v", e)
	}
	err := e.Check("profile: --batch 4096 --seq 512")
	if avail, ok := limits.AvailableMemory(); ok && e.Total > avail.Bytes {
		if err == nil || !strings.Contains(err.Error(), "profile: --batch 4096 --seq 512 needs about ") || !strings.Contains(err.Error(), "of working memory; ") {
			t.Errorf("Check: %v", err)
		}
	}
}

// TestResNetForwardByHand: ResNet-18 at batch 8 × 224², the weights on the
// host and two runners (bench compile).
func TestResNetForwardByHand(t *testing.T) {
	acts := int64(4*6*8*224*224 + // the images and their copy
		4*5*64*8*112*112 + // conv1, bn1, relu and two temporaries at 112²
		4*64*8*56*56 + // maxpool
		2*7*4*8*64*56*56 + // layer1: 2 blocks of 7 maps
		(9+7)*4*8*128*28*28 + // layer2: a downsample block and a plain one
		(9+7)*4*8*256*14*14 +
		(9+7)*4*8*512*7*7 +
		4*3*512*8 + 4*8*1000) // avgpool, flatten, fc
	if acts != 324418816 {
		t.Fatalf("the hand sum is %d", acts)
	}
	const params = 11689512
	e := ResNetForward(models.ResNet18Config(), dim("--batch", 8), dim("--image", 224), Where{WeightCopies: 3, HoldsAll: true})
	if e.Overflow != "" || e.State != 4*params || e.Total != 2*(3*4*params+acts) {
		t.Errorf("got %+v, want total %d", e, 2*(3*4*params+acts))
	}
	// Freed as they go: the stem and the largest block, layer1's first.
	live := int64(4*6*8*224*224 + 4*5*64*8*112*112 + 4*64*8*56*56 + 7*4*8*64*56*56 + 4*3*512*8 + 4*8*1000)
	if f := ResNetForward(models.ResNet18Config(), dim("--batch", 8), dim("--image", 224), Where{WeightCopies: 3}); f.Total != 2*(3*4*params+live) {
		t.Errorf("freed as they go: %+v, want total %d", f, 2*(3*4*params+live))
	}
	// The finding: batch 4096 at 1024² (the images alone are 51.5 GB).
	big := ResNetForward(models.ResNet18Config(), dim("--batch", 4096), dim("--image", 1024), Where{WeightCopies: 3})
	if big.Total < 2*2*51539607552 {
		t.Errorf("batch 4096 at 1024²: %+v", big)
	}
}

// TestBertTrainingByHand: full fine-tuning of bert-tiny at batch 8 × 128.
func TestBertTrainingByHand(t *testing.T) {
	const n = 8 * 128
	acts := int64(4*24*2*n*128 + 4*3*2*n*512 + 4*4*2*8*2*128*128 + // two layers kept for the backward
		4*24*n*128 + 4*3*n*512 + 4*4*8*2*128*128 + // one more: the backward's working set
		4*8*n*128 + 4*4*8*128 + 32*n) // embeddings, pooler, inputs
	if acts != 73449472 {
		t.Fatalf("the hand sum is %d", acts)
	}
	state := int64(16 * bertTinyParams) // weights, gradients, two moments
	tr := Training{Batch: dim("--batch-size", 8), Seq: dim("--max-len", 128), EvalBatch: dim("--eval-batch-size", 8), Where: Where{WeightCopies: 2}}
	e := BertTraining(models.BertTinyConfig(), tr)
	if e.Overflow != "" || e.State != state || e.Total != 2*(state+4*bertTinyParams+acts) {
		t.Errorf("got %+v, want state %d total %d", e, state, 2*(state+4*bertTinyParams+acts))
	}
	// A large evaluation batch counts instead when its forward is larger.
	tr.EvalBatch = dim("--eval-batch-size", 64)
	const m = 64 * 128
	// (a forward freed as it goes: one layer's outputs)
	eval := int64(32*m + 4*6*m*128 + 4*20*m*128 + 4*2*m*512 + 4*3*64*2*128*128 + 4*4*64*128 + 4*2*64*2)
	if eval != 168166400 {
		t.Fatalf("the hand sum is %d", eval)
	}
	if ev := BertTraining(models.BertTinyConfig(), tr); ev.Total != 2*(state+4*bertTinyParams+eval) {
		t.Errorf("eval batch 64: %+v, want total %d", ev, 2*(state+4*bertTinyParams+eval))
	}
	// Frozen embeddings train 30522+512+2 rows of 128 and a LayerNorm less.
	tr.EvalBatch, tr.FreezeEmbeddings = dim("--eval-batch-size", 8), true
	emb := int64((30522+512+2)*128 + 2*128)
	if f := BertTraining(models.BertTinyConfig(), tr); f.State != state-12*emb {
		t.Errorf("frozen embeddings: state %d, want %d", f.State, state-12*emb)
	}
}

// TestLoRATraining: rank-4 adapters on every Linear; rank 65536 (inside
// limits.LoRARank) needs far more than any host of this project has.
func TestLoRATraining(t *testing.T) {
	const adapters = 4 * (2*(10*128+2*512) + 3*128 + 2) // 19,976
	tr := Training{Batch: dim("--batch-size", 8), Seq: dim("--max-len", 128), EvalBatch: dim("--eval-batch-size", 8),
		LoRARank: dim("--lora-rank", 4), Where: Where{WeightCopies: 2}}
	e := BertTraining(models.BertTinyConfig(), tr)
	if want := int64(4*bertTinyParams + 16*adapters); e.State != want {
		t.Errorf("state %d, want %d (frozen weights, adapters with gradients and moments)", e.State, want)
	}
	tr.LoRARank, tr.Seq = dim("--lora-rank", 65536), dim("--max-len", 512)
	big := BertTraining(models.BertTinyConfig(), tr)
	// Each adapter's x·Aᵀ alone is 8 × 512 × 65536 floats (1 GiB), 12 of them.
	if big.Overflow != "" || big.Total < 2*12<<30 {
		t.Errorf("rank 65536: %+v", big)
	}
}

// TestAdamWStateBound: a config whose parameters fit the 8 GiB bound
// (limits.ModelBytes accepts it) needs four times that to train, which
// Check refuses by MaxModelBytes whatever the machine.
func TestAdamWStateBound(t *testing.T) {
	c := models.BertTinyConfig()
	c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers, c.NumAttentionHeads = 4096, 16384, 8, 32
	p := c.NumParameters()
	if 4*p > limits.MaxModelBytes || 16*p <= limits.MaxModelBytes {
		t.Fatalf("%d parameters: pick a config inside the parameter bound and outside it with AdamW", p)
	}
	e := BertTraining(c, Training{Batch: dim("--batch-size", 1), Seq: dim("--max-len", 8), EvalBatch: dim("--eval-batch-size", 1), Where: Where{WeightCopies: 2}})
	err := e.Check("train")
	if err == nil || !strings.Contains(err.Error(), "AdamW's two moments") || !strings.Contains(err.Error(), "more than the 8 GiB a model may take (limits.MaxModelBytes)") {
		t.Errorf("%v", err)
	}
}

// TestEstimatesNameTheOverflow: sizes past int64 name the flags.
func TestEstimatesNameTheOverflow(t *testing.T) {
	e := BertForward(models.BertTinyConfig(), dim("--batch", 1<<62), dim("--seq", 4), Where{WeightCopies: 2})
	if !strings.Contains(e.Overflow, "--batch × --seq") {
		t.Errorf("overflow %q", e.Overflow)
	}
	r := ResNetForward(models.ResNet18Config(), dim("--batch", 1<<40), dim("--image", 1<<20), Where{WeightCopies: 3})
	if err := r.Check("bench compile"); err == nil || !strings.HasPrefix(err.Error(), "bench compile: --batch × --image × --image overflows int64") {
		t.Errorf("%v", err)
	}
}
