package mixedprecision

import (
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/nn/quantized"
	"github.com/gomase/gomase/mase/quant"
)

func TestFormatConfigEveryFormat(t *testing.T) {
	want := []string{"integer", "minifloat_ieee", "minifloat_denorm", "log", "block_fp", "block_minifloat", "block_log",
		"binary", "binary_scaling", "binary_residual", "ternary", "mxint8"}
	if !slices.Equal(Formats, want) {
		t.Fatalf("Formats = %v, want %v", Formats, want)
	}
	class := map[string]string{"integer": "LinearInteger", "minifloat_ieee": "LinearMinifloatIEEE", "minifloat_denorm": "LinearMinifloatDenorm",
		"log": "LinearLog", "block_fp": "LinearBlockFP", "block_minifloat": "LinearBlockMinifloat", "block_log": "LinearBlockLog",
		"binary": "LinearBinary", "binary_scaling": "LinearBinaryScaling", "binary_residual": "LinearBinaryResidualSign",
		"ternary": "LinearTernary", "mxint8": "LinearMXInt8"}
	for _, f := range Formats {
		cfg, err := FormatConfig(f, 8, 4)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		lc, err := quant.ParseLinearConfig(cfg)
		if err != nil {
			t.Errorf("%s: ParseLinearConfig: %v", f, err)
			continue
		}
		if lc.TypeName() != class[f] {
			t.Errorf("%s: class %s, want %s", f, lc.TypeName(), class[f])
		}
		// The layer builds for every bert-tiny shape, the classifier's 2 outputs included.
		for _, shape := range [][2]int{{128, 128}, {128, 512}, {512, 128}, {128, 2}} {
			if _, err := quantized.NewLinear(shape[0], shape[1], true, lc); err != nil {
				t.Errorf("%s %v: %v", f, shape, err)
			}
		}
	}
}

func TestFormatConfigValues(t *testing.T) {
	cfg, err := FormatConfig("integer", 16, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"data_in", "weight", "bias"} {
		if cfg[op+"_width"] != 16 || cfg[op+"_frac_width"] != 8 {
			t.Errorf("integer %s: %v", op, cfg)
		}
	}
	for w, e := range map[int]int{4: 2, 8: 4, 16: 5, 32: 8} {
		if got := MinifloatExponentWidth(w); got != e {
			t.Errorf("MinifloatExponentWidth(%d) = %d, want %d", w, got, e)
		}
		cfg, err := FormatConfig("minifloat_ieee", w, 0)
		if err != nil {
			t.Errorf("minifloat_ieee %d: %v", w, err)
			continue
		}
		if cfg["weight_exponent_width"] != e || cfg["weight_exponent_bias"] != nil {
			t.Errorf("minifloat_ieee %d: %v", w, cfg)
		}
	}
	cfg, _ = FormatConfig("block_fp", 8, 0)
	if !slices.Equal(cfg["weight_block_size"].([]int), []int{1, 16}) || !slices.Equal(cfg["bias_block_size"].([]int), []int{16}) ||
		cfg["data_in_exponent_width"] != 8 {
		t.Errorf("block_fp: %v", cfg)
	}
	cfg, _ = FormatConfig("binary", 8, 0)
	if cfg["weight_bipolar"] != true || cfg["weight_stochastic"] != false || len(cfg) != 3 {
		t.Errorf("binary: %v", cfg)
	}
	// Two configs do not share their block-size lists.
	a, _ := FormatConfig("block_log", 8, 0)
	b, _ := FormatConfig("block_log", 8, 0)
	a["weight_block_size"].([]int)[0] = 99
	if b["weight_block_size"].([]int)[0] != 1 {
		t.Error("configs share a block-size list")
	}

	for _, tc := range []struct {
		name        string
		width, frac int
		want        string
	}{
		{"float8", 8, 4, "allowed: integer, minifloat_ieee"},
		{"integer", 8, 9, "data_in_frac_width"},
		{"integer", 0, 0, "width 0"},
		{"log", 16, 0, "data_in_width 16"},
		{"integer", 40, 4, "data_in_width 40"},
	} {
		_, err := FormatConfig(tc.name, tc.width, tc.frac)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FormatConfig(%s, %d, %d) error %v, want one containing %q", tc.name, tc.width, tc.frac, err, tc.want)
		}
	}
	// frac = width is a valid integer format (Task 1's 8/8).
	if _, err := FormatConfig("integer", 8, 8); err != nil {
		t.Errorf("integer 8/8: %v", err)
	}
}
