package mixedprecision

import (
	"context"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/quant"
	"github.com/gomase/gomase/mase/search"
)

func TestFormatTable(t *testing.T) {
	md, err := FormatTable(8, 4)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(md, "\n"); lines != 2+len(Formats) {
		t.Errorf("%d lines:\n%s", lines, md)
	}
	if !strings.Contains(md, "| integer | LinearInteger | 8.000 | 12 |") {
		t.Errorf("integer row missing:\n%s", md)
	}
}

func TestLayerTable(t *testing.T) {
	md := LayerTable(search.FrozenTrial{Params: map[string]any{"b_type": "integer", "b_width": 16, "b_frac_width": 4, "a_type": "linear"}})
	want := "| layer | type | width | frac width |\n|---|---|---|---|\n| a | linear |  |  |\n| b | integer | 16 | 4 |\n"
	if md != want {
		t.Errorf("got\n%s\nwant\n%s", md, want)
	}
}

// FormatResultOf reads the every-layer trial and the best; RankFormats
// orders by the every-layer accuracy.
func TestFormatResults(t *testing.T) {
	st := newStudy(t, search.NewRandomSampler(1))
	if _, err := st.EnqueueTrial(map[string]any{"x": 0.0}); err != nil {
		t.Fatal(err)
	}
	values := []float64{0.6, 0.8, 0.7}
	if err := st.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		if _, err := tr.SuggestFloat("x", 0, 1); err != nil {
			return 0, err
		}
		if err := tr.SetUserAttr("quantized_layers", "3/14"); err != nil {
			return 0, err
		}
		return values[tr.Number()], tr.SetUserAttr("w_storage_bits", 20.0)
	}, 3, 0); err != nil {
		t.Fatal(err)
	}
	r, err := FormatResultOf(quant.Log, st)
	if err != nil || r.EveryLayer != 0.6 || r.Best != 0.8 || r.BestLayers != "3/14" || r.BestBits != 20 || r.Trials != 3 {
		t.Fatalf("result %+v, %v", r, err)
	}
	ranked := RankFormats([]FormatResult{r, {Format: quant.Integer, EveryLayer: 0.75}, {Format: quant.Binary, EveryLayer: 0.5}})
	if ranked[0].Format != quant.Integer || ranked[1].Format != quant.Log || ranked[2].Format != quant.Binary {
		t.Errorf("ranking %+v", ranked)
	}
}
