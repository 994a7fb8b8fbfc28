// Package quant holds MASE's number formats (src/chop/nn/quantizers): each
// one as an exact reference function on float64 values and as a GoMLX graph
// function whose gradient is the straight-through estimator.
//
// The reference functions compute in exact float64 arithmetic the value
// each of MASE's formulas intends (spec §6), with round-half-to-even. Where
// MASE's float32 arithmetic produces an artefact (minifloat_denorm maps 1.0
// to 0.875), the reference gives the intended value; docs/quantization.md
// lists every difference from MASE.
package quant

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Format names, as MASE's quantisation configs spell them ("name" key).
const (
	Integer         = "integer"          // fixed point (spec §6.1); "fixed" is accepted as an alias
	MinifloatIEEE   = "minifloat_ieee"   // §6.2
	MinifloatDenorm = "minifloat_denorm" // §6.3
	Log             = "log"              // §6.4
	BlockFP         = "block_fp"         // §6.5 (MSFP)
	BlockMinifloat  = "block_minifloat"  // §6.6
	BlockLog        = "block_log"        // §6.7
	Binary          = "binary"           // §6.8
	BinaryResidual  = "binary_residual"  // §6.9 (residual sign)
	Ternary         = "ternary"          // §6.10
	MXInt8          = "mxint8"           // §6.11
)

// Fixed is MASE's alias of Integer ("linear_fixed" → LinearInteger).
const Fixed = "fixed"

// Formats lists the format names a Spec accepts, in the order of spec §6
// (the alias Fixed is accepted too).
var Formats = []string{Integer, MinifloatIEEE, MinifloatDenorm, Log, BlockFP, BlockMinifloat, BlockLog, Binary, BinaryResidual, Ternary, MXInt8}

// Spec is the settings of one quantiser: a format and its parameters, in
// MASE's vocabulary (width, frac_width, exponent_width, exponent_bias,
// exponent_bias_width, block_size, ...). Which fields a format reads is
// documented on the format's reference function; Validate rejects values
// out of range for the format and fields the format does not read.
type Spec struct {
	Format            string `json:"name"`
	Width             int    `json:"width,omitempty"`
	FracWidth         int    `json:"frac_width,omitempty"`
	ExponentWidth     int    `json:"exponent_width,omitempty"`
	ExponentBias      *int   `json:"exponent_bias,omitempty"` // nil: the format's default bias
	ExponentBiasWidth int    `json:"exponent_bias_width,omitempty"`
	BlockSize         []int  `json:"block_size,omitempty"`
	SkipFirstDim      bool   `json:"skip_first_dim,omitempty"`
	GroupSize         int    `json:"group_size,omitempty"` // MXINT8
	Floor             bool   `json:"floor,omitempty"`      // integer: floor instead of round-half-even
	Bipolar           bool   `json:"bipolar,omitempty"`    // binary
	Stochastic        bool   `json:"stochastic,omitempty"` // binary
	Levels            int    `json:"levels,omitempty"`     // binary residual (default 2)
	ScalingFactor     bool   `json:"scaling_factor,omitempty"`
	Seed              uint64 `json:"seed,omitempty"` // stochastic formats
	// Means are the residual-sign level magnitudes (binary_residual); nil
	// means MASE's initial values [L, L−1, ..., 1]/Σ.
	Means []float64 `json:"means,omitempty"`
	// Mean, Median and Max are the ternary statistics MASE's configs carry
	// (weight_mean, ...). MASE computes and then ignores them; they only
	// appear in Precision.
	Mean   *float64 `json:"mean,omitempty"`
	Median *float64 `json:"median,omitempty"`
	Max    *float64 `json:"max,omitempty"`
}

// Allowed ranges, checked by Validate.
const (
	maxIntegerWidth   = 32 // integer width 1..32
	maxFloatWidth     = 32 // minifloat and block-FP element width
	maxExponentWidth  = 10 // minifloat / block-FP exponent width 1..10
	maxLogWidth       = 11 // log / block-log width 2..11 (1 sign bit + up to 10 exponent bits)
	maxBiasWidth      = 10 // exponent_bias_width 1..10
	maxLevels         = 8  // residual-sign levels 1..8
	maxBlockDims      = 8  // block_size has 1..8 entries
	minExponent       = -1022
	maxExponent       = 1022
	defaultLevels     = 2
	binaryWidth       = 1
	ternaryWidth      = 2
	mxint8Width       = 8
	closeToZero       = 1e-8 // torch.isclose(x, 0): |x| ≤ atol
	mxint8ScaleBias   = 127
	mxint8MantissaMax = 127
)

// MXInt8GroupSizes are the group sizes the MXINT8 kernels support.
var MXInt8GroupSizes = []int{8, 16, 32, 64, 128, 256, 512}

// canonical returns the format name with the alias resolved.
func (s Spec) canonical() string {
	if s.Format == Fixed {
		return Integer
	}
	return s.Format
}

// DefaultExponentBias is MASE's default bias for an exponent of
// exponentWidth bits: 2^(E−1) − 1 (minifloats and block floating point);
// 0 for exponentWidth < 1.
func DefaultExponentBias(exponentWidth int) int {
	if exponentWidth < 1 {
		return 0
	}
	return 1<<min(exponentWidth-1, 62) - 1
}

// DefaultLogBias is MASE's default bias of the log format of the given
// width: 2^(width−2) − 1 (width − 1 exponent bits).
func DefaultLogBias(width int) int { return DefaultExponentBias(width - 1) }

// DefaultResidualMeans are MASE's initial residual-sign means for levels
// levels: [L, L−1, ..., 1] / Σ (levels 2: [2/3, 1/3]).
func DefaultResidualMeans(levels int) []float64 {
	sum := float64(levels*(levels+1)) / 2
	out := make([]float64, levels)
	for i := range out {
		out[i] = float64(levels-i) / sum
	}
	return out
}

// bias returns the exponent bias the format uses.
func (s Spec) bias() int {
	if s.ExponentBias != nil {
		return *s.ExponentBias
	}
	if s.canonical() == Log {
		return DefaultLogBias(s.Width)
	}
	return DefaultExponentBias(s.ExponentWidth)
}

// levels returns the residual-sign level count (default 2).
func (s Spec) levels() int {
	if s.Levels == 0 {
		if len(s.Means) > 0 {
			return len(s.Means)
		}
		return defaultLevels
	}
	return s.Levels
}

// means returns the residual-sign means.
func (s Spec) means() []float64 {
	if len(s.Means) > 0 {
		return s.Means
	}
	return DefaultResidualMeans(s.levels())
}

// field is one Spec field, by MASE's key suffix.
type field struct {
	name string
	set  func(s Spec) bool // the field has a non-default value
}

var fields = []field{
	{"width", func(s Spec) bool { return s.Width != 0 }},
	{"frac_width", func(s Spec) bool { return s.FracWidth != 0 }},
	{"exponent_width", func(s Spec) bool { return s.ExponentWidth != 0 }},
	{"exponent_bias", func(s Spec) bool { return s.ExponentBias != nil }},
	{"exponent_bias_width", func(s Spec) bool { return s.ExponentBiasWidth != 0 }},
	{"block_size", func(s Spec) bool { return s.BlockSize != nil }},
	{"skip_first_dim", func(s Spec) bool { return s.SkipFirstDim }},
	{"group_size", func(s Spec) bool { return s.GroupSize != 0 }},
	{"floor", func(s Spec) bool { return s.Floor }},
	{"bipolar", func(s Spec) bool { return s.Bipolar }},
	{"stochastic", func(s Spec) bool { return s.Stochastic }},
	{"levels", func(s Spec) bool { return s.Levels != 0 }},
	{"scaling_factor", func(s Spec) bool { return s.ScalingFactor }},
	{"seed", func(s Spec) bool { return s.Seed != 0 }},
	{"means", func(s Spec) bool { return s.Means != nil }},
	{"mean", func(s Spec) bool { return s.Mean != nil }},
	{"median", func(s Spec) bool { return s.Median != nil }},
	{"max", func(s Spec) bool { return s.Max != nil }},
}

// formatFields are the fields each format reads.
var formatFields = map[string][]string{
	Integer:         {"width", "frac_width", "floor"},
	MinifloatIEEE:   {"width", "exponent_width", "exponent_bias"},
	MinifloatDenorm: {"width", "exponent_width", "exponent_bias"},
	Log:             {"width", "exponent_bias"},
	BlockFP:         {"width", "exponent_width", "exponent_bias", "block_size", "skip_first_dim"},
	BlockMinifloat:  {"width", "exponent_width", "exponent_bias_width", "block_size", "skip_first_dim"},
	BlockLog:        {"width", "exponent_bias_width", "block_size", "skip_first_dim"},
	Binary:          {"width", "bipolar", "stochastic", "seed"},
	BinaryResidual:  {"width", "levels", "means", "bipolar", "stochastic"},
	Ternary:         {"width", "scaling_factor", "mean", "median", "max"},
	MXInt8:          {"width", "group_size"},
}

// FieldNamer names a Spec field (MASE's key suffix, e.g. "frac_width") in
// error messages: ParseLinearConfig prefixes the operand ("data_in_"), the
// command line spells flags ("--frac-width").
type FieldNamer func(field string) string

// Validate checks the spec: a known format, the fields it reads in range,
// and no field set that the format does not read. Errors name the field
// with MASE's key name and give the allowed values.
func (s Spec) Validate() error { return s.ValidateNamed(func(f string) string { return f }) }

// ValidateNamed is Validate with fields named by name in errors.
//
// Ranges: integer width 1..32, frac_width 0..width; minifloats
// exponent_width 1..10, width exponent_width+1..32; log width 2..11;
// block_fp width 2..32, exponent_width 1..10; block_minifloat as the
// minifloats plus exponent_bias_width 1..10; block_log width 2..11,
// exponent_bias_width 1..10; an exponent_bias must keep the format's
// exponents inside [−1022, 1022] (float64's normal range); block_size
// has 1..8 entries, each positive or −1 (the whole dimension); binary
// width 1 (or unset), ternary width 2 (or unset), mxint8 width 8 (or
// unset) and group_size in MXInt8GroupSizes; binary_residual levels 1..8
// (0: 2) and, when given, one positive mean per level.
func (s Spec) ValidateNamed(name FieldNamer) error {
	format := s.canonical()
	used, ok := formatFields[format]
	if !ok {
		if s.Format == "" {
			return fmt.Errorf("quantisation format is missing (allowed: %s)", strings.Join(allowedFormats(), ", "))
		}
		return fmt.Errorf("unknown quantisation format %q (allowed: %s)", s.Format, strings.Join(allowedFormats(), ", "))
	}
	for _, f := range fields {
		if f.set(s) && !slices.Contains(used, f.name) {
			var reads []string
			for _, u := range used {
				reads = append(reads, name(u))
			}
			return fmt.Errorf("%s is not used by %s (it reads %s)", name(f.name), format, strings.Join(reads, ", "))
		}
	}
	rng := func(f string, v, lo, hi int) error {
		if v < lo || v > hi {
			return fmt.Errorf("%s %d is out of range for %s (allowed: %d..%d)", name(f), v, format, lo, hi)
		}
		return nil
	}
	fixedWidth := func(want int) error {
		if s.Width != 0 && s.Width != want {
			return fmt.Errorf("%s %d is out of range for %s (allowed: %d, or unset)", name("width"), s.Width, format, want)
		}
		return nil
	}
	// exponents checks that [eMin, eMax] lies inside float64's normal range.
	exponents := func(eMin, eMax int) error {
		if eMin < minExponent || eMax > maxExponent {
			return fmt.Errorf("%s %d gives exponents %d..%d for %s (allowed: a bias keeping them inside %d..%d)",
				name("exponent_bias"), s.bias(), eMin, eMax, format, minExponent, maxExponent)
		}
		return nil
	}
	var err error
	switch format {
	case Integer:
		if err = rng("width", s.Width, 1, maxIntegerWidth); err == nil {
			err = rng("frac_width", s.FracWidth, 0, s.Width)
		}
	case MinifloatIEEE, MinifloatDenorm, BlockMinifloat:
		if err = rng("exponent_width", s.ExponentWidth, 1, maxExponentWidth); err != nil {
			return err
		}
		if err = rng("width", s.Width, s.ExponentWidth+1, maxFloatWidth); err != nil {
			return err
		}
		if format == BlockMinifloat {
			if err = rng("exponent_bias_width", s.ExponentBiasWidth, 1, maxBiasWidth); err == nil {
				err = s.validateBlock(name, format)
			}
			return err
		}
		err = exponents(-s.bias(), 1<<s.ExponentWidth-1-s.bias())
	case Log:
		if err = rng("width", s.Width, 2, maxLogWidth); err == nil {
			err = exponents(-s.bias(), 1<<(s.Width-1)-1-s.bias())
		}
	case BlockFP:
		if err = rng("width", s.Width, 2, maxFloatWidth); err != nil {
			return err
		}
		if err = rng("exponent_width", s.ExponentWidth, 1, maxExponentWidth); err != nil {
			return err
		}
		if err = exponents(-s.bias(), 1<<s.ExponentWidth-1-s.bias()); err == nil {
			err = s.validateBlock(name, format)
		}
	case BlockLog:
		if err = rng("width", s.Width, 2, maxLogWidth); err != nil {
			return err
		}
		if err = rng("exponent_bias_width", s.ExponentBiasWidth, 1, maxBiasWidth); err == nil {
			err = s.validateBlock(name, format)
		}
	case Binary:
		err = fixedWidth(binaryWidth)
	case BinaryResidual:
		if err = fixedWidth(binaryWidth); err != nil {
			return err
		}
		if s.Levels != 0 {
			if err = rng("levels", s.Levels, 1, maxLevels); err != nil {
				return err
			}
		}
		if s.Means != nil {
			if len(s.Means) != s.levels() {
				return fmt.Errorf("%s has %d values for %d levels (allowed: one value per level)", name("means"), len(s.Means), s.levels())
			}
			for i, m := range s.Means {
				if math.IsNaN(m) || math.IsInf(m, 0) {
					return fmt.Errorf("%s[%d] = %v (allowed: finite numbers)", name("means"), i, m)
				}
			}
		}
	case Ternary:
		err = fixedWidth(ternaryWidth)
	case MXInt8:
		if err = fixedWidth(mxint8Width); err != nil {
			return err
		}
		if !slices.Contains(MXInt8GroupSizes, s.GroupSize) {
			return fmt.Errorf("%s %d is not supported by mxint8 (allowed: %s)", name("group_size"), s.GroupSize, intList(MXInt8GroupSizes))
		}
	}
	return err
}

func (s Spec) validateBlock(name FieldNamer, format string) error {
	if len(s.BlockSize) == 0 || len(s.BlockSize) > maxBlockDims {
		return fmt.Errorf("%s %v for %s has %d entries (allowed: 1..%d entries, each positive or -1)", name("block_size"), s.BlockSize, format, len(s.BlockSize), maxBlockDims)
	}
	for _, b := range s.BlockSize {
		if b < 1 && b != -1 {
			return fmt.Errorf("%s %v for %s has entry %d (allowed: positive sizes, or -1 for the whole dimension)", name("block_size"), s.BlockSize, format, b)
		}
	}
	return nil
}

func allowedFormats() []string { return append(slices.Clone(Formats), Fixed) }

func intList(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// MetaType is MASE's metadata "type" for values in this format: the
// format name, as update_quant_meta_param writes config["name"]
// ("integer"; a Spec written with the alias keeps "fixed").
func (s Spec) MetaType() string { return s.Format }

// Precision is MASE's metadata "precision" list for the format
// (QUANT_ARITH_TO_SUFFIXES in update_node_meta.py), with Python's None as
// nil, flags as bools and block sizes as []int:
//
//	integer          [width, frac_width]
//	minifloat_*      [width, exponent_width, exponent_bias]
//	log              [width, exponent_bias]
//	block_fp         [width, exponent_width, exponent_bias, block_size]
//	block_minifloat  [width, exponent_width, exponent_bias_width, block_size]
//	block_log        [width, exponent_bias_width, block_size]
//	binary, binary_residual  [width, stochastic, bipolar]
//	ternary          [width, scaling_factor, mean, median, max]
//	mxint8           [8, group_size] (gomase's own; MASE's pass has no entry)
//
// exponent_bias is nil when the spec uses the default bias (MASE keeps the
// config's None); an unset binary/ternary width reports 1/2.
func (s Spec) Precision() []any {
	bias := func() any {
		if s.ExponentBias == nil {
			return nil
		}
		return *s.ExponentBias
	}
	opt := func(p *float64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	width := func(def int) int {
		if s.Width == 0 {
			return def
		}
		return s.Width
	}
	switch s.canonical() {
	case Integer:
		return []any{s.Width, s.FracWidth}
	case MinifloatIEEE, MinifloatDenorm:
		return []any{s.Width, s.ExponentWidth, bias()}
	case Log:
		return []any{s.Width, bias()}
	case BlockFP:
		return []any{s.Width, s.ExponentWidth, bias(), slices.Clone(s.BlockSize)}
	case BlockMinifloat:
		return []any{s.Width, s.ExponentWidth, s.ExponentBiasWidth, slices.Clone(s.BlockSize)}
	case BlockLog:
		return []any{s.Width, s.ExponentBiasWidth, slices.Clone(s.BlockSize)}
	case Binary, BinaryResidual:
		return []any{width(binaryWidth), s.Stochastic, s.Bipolar}
	case Ternary:
		return []any{width(ternaryWidth), s.ScalingFactor, opt(s.Mean), opt(s.Median), opt(s.Max)}
	case MXInt8:
		return []any{width(mxint8Width), s.GroupSize}
	}
	return nil
}

// PrecisionSum is Python's sum() of Precision, which MASE's
// calculate_avg_bits uses as a "bit count" (integer 8/4 counts 12): bools
// count 0/1. An entry that Python cannot add (None, a block-size list) is
// an error, as it is in MASE.
func (s Spec) PrecisionSum() (float64, error) {
	sum := 0.0
	for i, p := range s.Precision() {
		switch v := p.(type) {
		case int:
			sum += float64(v)
		case float64:
			sum += v
		case bool:
			if v {
				sum++
			}
		default:
			return 0, fmt.Errorf("%s precision entry %d is %v, which cannot be summed (MASE raises a TypeError too)", s.Format, i, p)
		}
	}
	return sum, nil
}

// BitsPerElement is the real storage cost of one element, in bits, with
// shared fields amortised over a nominal block (block_size entries
// multiplied, -1 counting as 1; use BitsPerElementFor for a tensor):
//
//	integer, minifloat_*, log   width
//	block_fp                    width + exponent_width / block elements
//	block_minifloat             width + exponent_bias_width / block elements
//	block_log                   width + exponent_bias_width / block elements
//	binary                      1
//	binary_residual             levels (one sign bit per level; the means are per layer)
//	ternary                     2
//	mxint8                      8 + 8 / group_size (8.25 at 32)
//
// It returns 0 for an unknown format.
func (s Spec) BitsPerElement() float64 {
	n := 1
	for _, b := range s.BlockSize {
		if b > 0 {
			n *= b
		}
	}
	return s.bits(float64(n))
}

func (s Spec) bits(blockElems float64) float64 {
	switch s.canonical() {
	case Integer, MinifloatIEEE, MinifloatDenorm, Log:
		return float64(s.Width)
	case BlockFP:
		return float64(s.Width) + float64(s.ExponentWidth)/blockElems
	case BlockMinifloat, BlockLog:
		return float64(s.Width) + float64(s.ExponentBiasWidth)/blockElems
	case Binary:
		return 1
	case BinaryResidual:
		return float64(s.levels())
	case Ternary:
		return 2
	case MXInt8:
		return mxint8Width + 8/float64(s.GroupSize)
	}
	return 0
}

// BitsPerElementFor is BitsPerElement for a tensor of the given shape:
// block formats count one shared field per block of MASE's blocking of
// that shape (padding included), so a partial block costs as much as a
// full one.
func (s Spec) BitsPerElementFor(shape []int) (float64, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	n, err := numel(shape)
	if err != nil {
		return 0, err
	}
	switch s.canonical() {
	case BlockFP, BlockMinifloat, BlockLog:
		if n == 0 {
			return s.bits(math.Inf(1)), nil
		}
		_, nBlocks := blockIDs(shape, BlockShape(shape, s.BlockSize, s.SkipFirstDim))
		return s.bits(float64(n) / float64(nBlocks)), nil
	}
	return s.bits(1), nil
}

// numel checks a shape and returns its element count.
func numel(shape []int) (int, error) {
	n := 1
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has negative dimension %d at axis %d (allowed: sizes ≥ 0)", shape, d, i)
		}
		n *= d
	}
	return n, nil
}
