package nas

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/workmem"
)

// TestSpaceTrainingState: a space whose largest model fits the 8 GiB
// parameter bound (so its config validates) needs four times that to
// train with AdamW; Validate refuses it before any trial builds it.
func TestSpaceTrainingState(t *testing.T) {
	s := Tutorial5Space()
	s.NumLayers, s.NumHeads, s.HiddenSize, s.IntermediateSize = []int{2, 8}, []int{32}, []int{4096}, []int{16384}
	largest := s.config(8, 32, 4096, 16384)
	if p := largest.NumParameters(); 4*p > limits.MaxModelBytes || 16*p <= limits.MaxModelBytes {
		t.Fatalf("%d parameters: want a model inside the parameter bound and outside it with AdamW", p)
	}
	err := s.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "nas: training the largest model of the space: the weights of ") ||
		!strings.Contains(err.Error(), "AdamW's two moments") || !strings.Contains(err.Error(), "more than the 8 GiB a model may take") {
		t.Errorf("Validate: %v", err)
	}
	if err := Tutorial5Space().Validate(); err != nil {
		t.Errorf("the tutorial's space: %v", err)
	}
}

// TestSpaceCheckTraining: the check before the first trial counts the
// space's largest trial (most layers, heads and widths) at the run's
// batch and length, and names it.
func TestSpaceCheckTraining(t *testing.T) {
	s := Tutorial5Space()
	batch, seq := limits.Dim{Name: "batch size", N: 8}, limits.Dim{Name: "--max-len", N: 64}
	if err := s.CheckTraining(batch, seq, batch, false); err != nil {
		t.Errorf("the tutorial's space at 8 × 64 tokens: %v", err)
	}
	want := workmem.BertTraining(s.config(8, 16, 512, 2048), workmem.Training{Batch: batch, Seq: seq, EvalBatch: batch, Where: trialWhere})
	if small := workmem.BertTraining(s.config(2, 2, 128, 512), workmem.Training{Batch: batch, Seq: seq, EvalBatch: batch, Where: trialWhere}); small.Total >= want.Total {
		t.Fatalf("the largest trial is not the largest: %d ≤ %d", want.Total, small.Total)
	}
	huge := limits.Dim{Name: "batch size", N: 65536}
	err := s.CheckTraining(huge, limits.Dim{Name: "--max-len", N: 512}, huge, false)
	if err == nil || !strings.HasPrefix(err.Error(), "nas: the space's largest trial (8 layers, hidden 512, intermediate 2048, 16 heads) at batch size 65536, --max-len 512 needs about ") {
		t.Errorf("65536 × 512 tokens: %v", err)
	}
	bad := Tutorial5Space()
	bad.NumHeads = nil
	if err := bad.CheckTraining(batch, seq, batch, false); err == nil || !strings.Contains(err.Error(), "num_heads has no values") {
		t.Errorf("an invalid space: %v", err)
	}
}
