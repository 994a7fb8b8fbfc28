package mixedprecision

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gomase/gomase/mase/quant"
	"github.com/gomase/gomase/mase/search"
)

// FormatTable is the Markdown table of the formats a search can use at
// width bits (integer with fracWidth fractional bits): MASE's class, the
// storage bits per element of a 128×128 weight, and MASE's precision sum
// (calculate_avg_bits' figure, or why it fails).
func FormatTable(width, fracWidth int) (string, error) {
	var b strings.Builder
	b.WriteString("| format | MASE class | weight storage bits | MASE's precision sum |\n|---|---|---|---|\n")
	for _, f := range Formats {
		cfg, err := FormatConfig(f, width, fracWidth)
		if err != nil {
			return "", err
		}
		lc, err := quant.ParseLinearConfig(cfg)
		if err != nil {
			return "", err
		}
		class, err := quant.LinearTypeName(f)
		if err != nil {
			return "", err
		}
		storage, err := lc.Weight.BitsPerElementFor([]int{128, 128})
		if err != nil {
			return "", err
		}
		maseSum := "fails (None or a block-size list)"
		if v, err := lc.Weight.PrecisionSum(); err == nil {
			maseSum = fmt.Sprint(v)
		}
		fmt.Fprintf(&b, "| %s | %s | %.3f | %s |\n", f, class, storage, maseSum)
	}
	return b.String(), nil
}

// LayerTable is the Markdown table of a trial's choice for each layer:
// its type and, for integer layers with searched widths, the widths.
func LayerTable(t search.FrozenTrial) string {
	var names []string
	for k := range t.Params {
		if strings.HasSuffix(k, "_type") {
			names = append(names, strings.TrimSuffix(k, "_type"))
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| layer | type | width | frac width |\n|---|---|---|---|\n")
	for _, n := range names {
		w, f := t.Params[n+"_width"], t.Params[n+"_frac_width"]
		if w == nil {
			w, f = "", ""
		}
		fmt.Fprintf(&b, "| %s | %v | %v | %v |\n", n, t.Params[n+"_type"], w, f)
	}
	return b.String()
}

// FormatResult is one format's study of Lab 3 Task 2, whose first trial
// puts every Linear layer in the format (Space.EveryLayer) and whose
// others are the sampler's.
type FormatResult struct {
	Format string `json:"format"`
	// EveryLayer is the accuracy of the first trial: every layer in the
	// format, the same layers for every format.
	EveryLayer float64 `json:"every_layer_accuracy"`
	// Best is the study's best accuracy, BestLayers its "k/N" quantized
	// layers and BestBits its weight storage bits per element.
	Best       float64 `json:"best_accuracy"`
	BestLayers string  `json:"best_quantized_layers"`
	BestBits   float64 `json:"best_weight_bits"`
	// Trials is how many trials completed.
	Trials int `json:"trials"`
}

// FormatResultOf reads a Task 2 study of format whose trial 0 is the
// every-layer trial; that trial must have completed.
func FormatResultOf(format string, st *search.Study) (FormatResult, error) {
	ts, err := st.Trials()
	if err != nil {
		return FormatResult{}, err
	}
	r := FormatResult{Format: format, EveryLayer: math.NaN(), Best: math.NaN()}
	for _, t := range ts {
		if t.State != search.Complete {
			continue
		}
		r.Trials++
		if t.Number == 0 {
			r.EveryLayer = t.Value
		}
		if math.IsNaN(r.Best) || t.Value > r.Best {
			r.Best, r.BestLayers = t.Value, fmt.Sprint(t.UserAttrs["quantized_layers"])
			r.BestBits, _ = t.UserAttrs["w_storage_bits"].(float64)
		}
	}
	if math.IsNaN(r.EveryLayer) {
		return FormatResult{}, fmt.Errorf("mixedprecision: %s: the every-layer trial (trial 0) did not complete", format)
	}
	return r, nil
}

// RankFormats orders results by the every-layer accuracy, best first (the
// formats compared on the same layers), then by the best accuracy.
func RankFormats(rs []FormatResult) []FormatResult {
	out := append([]FormatResult(nil), rs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].EveryLayer != out[j].EveryLayer {
			return out[i].EveryLayer > out[j].EveryLayer
		}
		return out[i].Best > out[j].Best
	})
	return out
}
