package labsetup

import (
	"context"
	"errors"
	"testing"

	"github.com/gomase/gomase/mase/search"
)

func TestArchitectureTable(t *testing.T) {
	st, err := search.NewStudy(search.Config{Name: "nas", Direction: search.Maximize, Sampler: search.NewRandomSampler(1), Logger: warnings()})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		if tr.Number() == 1 {
			return 0, errors.New("boom")
		}
		for k, v := range map[string]any{"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 128, "intermediate_size": 256, "identities": 3, "seconds": 1.5} {
			if err := tr.SetUserAttr(k, v); err != nil {
				return 0, err
			}
		}
		return float64(tr.Number()), nil
	}, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := ArchitectureTable(st, "seconds")
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Rows() != 2 || len(tbl.Columns) != 8 || tbl.Caption != "nas: completed trials" {
		t.Errorf("table: %d rows, columns %v, caption %q", tbl.Rows(), tbl.Columns, tbl.Caption)
	}
}
