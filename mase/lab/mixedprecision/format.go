package mixedprecision

import (
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase/quant"
)

// Linear is the choice that leaves a layer as it is: a float Linear stays
// in full precision (MASE's torch.nn.Linear choice; an already quantized
// layer keeps its class, as MASE's constructor skips it too).
const Linear = "linear"

// Formats lists the quantized Linear formats a Space may choose, in the
// order of the spec's Tutorial 6 table: integer, minifloat_ieee,
// minifloat_denorm, log, block_fp, block_minifloat, block_log, binary,
// binary_scaling, binary_residual, ternary, then gomase's mxint8.
var Formats = []string{quant.Integer, quant.MinifloatIEEE, quant.MinifloatDenorm, quant.Log, quant.BlockFP,
	quant.BlockMinifloat, quant.BlockLog, quant.Binary, quant.BinaryScaling, quant.BinaryResidual, quant.Ternary, quant.MXInt8}

// Exponent and block settings of FormatConfig.
const (
	blockFPExponentWidth = 8  // block_fp's shared exponent (MSFP-style 8 bits)
	biasWidth            = 8  // exponent_bias_width of block_minifloat and block_log
	mxint8GroupSize      = 32 // Lab 4's MXINT8 group
	blockElems           = 16 // block_size [1, 16] for data_in and weight, [16] for bias
)

// MinifloatExponentWidth is the exponent width FormatConfig gives the
// minifloat formats (minifloat_ieee, minifloat_denorm, block_minifloat) of
// a total width: 4 from 8 bits (E4M3, the spec's suggested 8-bit config), 5
// from 16 (IEEE half's E5M10), 8 from 32 (IEEE single's E8M23); below 8
// bits width/2 (E2M1 at 4 bits, at least 1), and between the named widths
// the value of the next smaller one.
func MinifloatExponentWidth(width int) int {
	switch {
	case width >= 32:
		return 8
	case width >= 16:
		return 5
	case width >= 8:
		return 4
	}
	return max(1, width/2)
}

// FormatConfig returns MASE's flat config of a quantized Linear in the
// named format (one of Formats) at the given width, the dict Tutorial 6's
// constructor passes as config= (x, w, b stand for the data_in_, weight_ and
// bias_ prefixes):
//
//	integer          {x,w,b}_width = width, {x,w,b}_frac_width = fracWidth
//	minifloat_ieee,  {x,w,b}_width = width, {x,w,b}_exponent_width =
//	minifloat_denorm MinifloatExponentWidth(width), {x,w,b}_exponent_bias None
//	                 (the default 2^(E−1) − 1)
//	log              {x,w,b}_width = width, {x,w,b}_exponent_bias None
//	                 (2^(width−2) − 1); width 2..11
//	block_fp         {x,w,b}_width = width, _exponent_width 8, _exponent_bias
//	                 None, _block_size [1, 16] for x and w, [16] for b
//	block_minifloat  {x,w,b}_width = width, _exponent_width as the minifloats,
//	                 _exponent_bias_width 8, blocks as block_fp
//	block_log        {x,w,b}_width = width, _exponent_bias_width 8, blocks as
//	                 block_fp; width 2..11
//	binary           weight_stochastic false, weight_bipolar true (bipolar
//	                 false crashes MASE on 2-D weights); x and b stay float
//	binary_scaling   {x,w,b}_stochastic false, {x,w,b}_bipolar true,
//	                 binary_training true (x, w and b all binarised)
//	binary_residual  data_in_stochastic, weight_stochastic false,
//	                 data_in_bipolar, weight_bipolar true, binary_training
//	                 true, data_in_levels 2, data_in_residual_sign true
//	ternary          weight_scaling_factor true (x and b stay float)
//	mxint8           weight_group_size 32, data_in_group_size 32 (b float)
//
// fracWidth is read only by integer (0 ≤ fracWidth ≤ width). The binary
// formats, ternary and mxint8 have a fixed element width (1, 2 and 8 bits)
// and ignore width, which must still be ≥ 1. The result is checked with
// quant.ParseLinearConfig, so a width the format cannot take (log at 16
// bits, say) is an error naming the key and the allowed range; an unknown
// name is an error listing Formats.
func FormatConfig(name string, width, fracWidth int) (map[string]any, error) {
	if width < 1 {
		return nil, fmt.Errorf("mixedprecision: %s: width %d is invalid (allowed: 1..32)", name, width)
	}
	cfg := map[string]any{"name": name}
	ops := []string{"data_in", "weight", "bias"}
	each := func(suffix string, v func(op string) any) {
		for _, op := range ops {
			cfg[op+"_"+suffix] = v(op)
		}
	}
	same := func(v any) func(string) any { return func(string) any { return v } }
	blocks := func(op string) any {
		if op == "bias" {
			return []int{blockElems}
		}
		return []int{1, blockElems}
	}
	switch name {
	case quant.Integer:
		each("width", same(width))
		each("frac_width", same(fracWidth))
	case quant.MinifloatIEEE, quant.MinifloatDenorm:
		each("width", same(width))
		each("exponent_width", same(MinifloatExponentWidth(width)))
		each("exponent_bias", same(nil))
	case quant.Log:
		each("width", same(width))
		each("exponent_bias", same(nil))
	case quant.BlockFP:
		each("width", same(width))
		each("exponent_width", same(blockFPExponentWidth))
		each("exponent_bias", same(nil))
		each("block_size", blocks)
	case quant.BlockMinifloat:
		each("width", same(width))
		each("exponent_width", same(MinifloatExponentWidth(width)))
		each("exponent_bias_width", same(biasWidth))
		each("block_size", blocks)
	case quant.BlockLog:
		each("width", same(width))
		each("exponent_bias_width", same(biasWidth))
		each("block_size", blocks)
	case quant.Binary:
		cfg["weight_stochastic"], cfg["weight_bipolar"] = false, true
	case quant.BinaryScaling:
		each("stochastic", same(false))
		each("bipolar", same(true))
		cfg["binary_training"] = true
	case quant.BinaryResidual:
		cfg["data_in_stochastic"], cfg["weight_stochastic"] = false, false
		cfg["data_in_bipolar"], cfg["weight_bipolar"] = true, true
		cfg["binary_training"] = true
		cfg["data_in_levels"], cfg["data_in_residual_sign"] = 2, true
	case quant.Ternary:
		cfg["weight_scaling_factor"] = true
	case quant.MXInt8:
		cfg["weight_group_size"], cfg["data_in_group_size"] = mxint8GroupSize, mxint8GroupSize
	default:
		return nil, fmt.Errorf("mixedprecision: unknown format %q (allowed: %s)", name, strings.Join(Formats, ", "))
	}
	if _, err := quant.ParseLinearConfig(cfg); err != nil {
		return nil, fmt.Errorf("mixedprecision: %s at width %d: %w", name, width, err)
	}
	return cfg, nil
}
