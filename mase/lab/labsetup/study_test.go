package labsetup

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search"
)

func TestLiveStudyProgressLine(t *testing.T) {
	st, err := LiveStudy("demo", search.NewRandomSampler(1), 3)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		if tr.Number() == 1 {
			return 0, errors.New("boom")
		}
		_ = tr.SetUserAttr("quantized_layers", "3/14")
		return float64(tr.Number()) + 0.5, nil
	}, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := st.Trials()
	if got := progressLine("demo", 3, st, ts[1]); !strings.HasPrefix(got, "demo: trial 2/3 fail; best so far 2.5000") {
		t.Errorf("line %q", got)
	}
	if got := progressLine("demo", 3, st, ts[2]); !strings.HasPrefix(got, "demo: trial 3/3 complete, value 2.5000, 3/14 layers quantized; best so far 2.5000") {
		t.Errorf("line %q", got)
	}
}

func TestLiveStudyAtResumes(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "study.jsonl")
	objective := func(tr *search.Trial) (float64, error) {
		x, err := tr.SuggestFloat("x", 0, 1)
		return x, err
	}
	for run, want := range []int{2, 4} {
		st, storage, err := LiveStudyAt(spec, "shared", search.NewRandomSampler(int64(run)), 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Optimize(context.Background(), objective, 2, 0); err != nil {
			t.Fatal(err)
		}
		ts, _ := st.Trials()
		storage.Close()
		if len(ts) != want {
			t.Errorf("run %d: the study holds %d trials, want %d (the first run's kept)", run, len(ts), want)
		}
	}
	if _, _, err := LiveStudyAt("postgresql://u@127.0.0.1:1/db?connect_timeout=2", "x", search.NewRandomSampler(1), 1); err == nil ||
		!strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("a server that is down: %v", err)
	}
}
