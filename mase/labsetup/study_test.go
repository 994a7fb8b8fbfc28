package labsetup

import (
	"context"
	"errors"
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
