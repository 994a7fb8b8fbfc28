package mixedprecision

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/lab/compress"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/search"
)

// quiet discards log lines.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestMain silences the passes' per-layer log lines.
func TestMain(m *testing.M) {
	passes.Logger = quiet
	os.Exit(m.Run())
}

// bertInputs are the traced inputs of the lab's classifier.
var bertInputs = []string{"input_ids", "attention_mask", "labels"}

// bertGraph is an untrained bert-tiny classifier traced with the lab's inputs.
func bertGraph(t *testing.T, seed uint64) *ir.MaseGraph {
	t.Helper()
	m, err := models.NewBertTiny(seed)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, bertInputs)
	if err != nil {
		t.Fatal(err)
	}
	return mg
}

// scriptSampler picks every categorical value with a function of the
// parameter's name and the order of its first suggestion in the trial.
type scriptSampler struct {
	pick  func(name string, order int, choices []any) any
	order int
}

func (s *scriptSampler) Sample(_ *search.Study, _ *search.Trial, name string, d search.Distribution) (float64, error) {
	cd, ok := d.(search.CategoricalDistribution)
	if !ok {
		return 0, fmt.Errorf("scriptSampler: %s is not categorical", name)
	}
	v := s.pick(name, s.order, cd.Choices)
	s.order++
	return d.ToInternal(v)
}

// newStudy returns a maximising in-memory study with the given sampler.
func newStudy(t *testing.T, sampler search.Sampler) *search.Study {
	t.Helper()
	st, err := search.NewStudy(search.Config{Name: "bert-tiny-mixed-precision-study", Direction: search.Maximize, Sampler: sampler, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// ask starts a trial by hand.
func ask(t *testing.T, st *search.Study) *search.Trial {
	t.Helper()
	tr, err := st.Ask(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// smallSession is a session on 64 SST-2 sentences (max length 32) with an
// untrained bert-tiny checkpoint, as compress's tests build it.
func smallSession(t *testing.T) *compress.Session {
	t.Helper()
	mg := bertGraph(t, 3)
	base := filepath.Join(t.TempDir(), "start")
	if err := checkpoint.Export(base, mg, checkpoint.Spec{}); err != nil {
		t.Fatal(err)
	}
	s, err := compress.NewSession(finetune.Options{Dataset: "sst2", Limit: 64, EvalLimit: 64, MaxLen: 32, Seed: 1}, finetune.FromScratch())
	if err != nil {
		t.Skipf("SST-2 or the tokenizer not available: %v", err)
	}
	s.Checkpoint = base
	return s
}
