package emit

import (
	"errors"
	"fmt"
	"math/bits"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/rtl"
)

// The bounds Validate holds a design to.
const (
	// MaxVectorSize is the most elements of one input or output vector.
	MaxVectorSize = 1 << 16
	// MaxWeights is the most weights of one Linear layer.
	MaxWeights = 1 << 22
	// MaxLayers is the most layers of a design.
	MaxLayers = 1024
	// MaxFormatWidth is the widest fixed-point format of a port or layer.
	MaxFormatWidth = 32
	// accBits is what the Go model's 64-bit accumulator may hold, its
	// sign apart.
	accBits = 62
)

// designFile bounds the size of design.json when LoadDesign reads it.
var designFile = limits.File{What: "a design.json", Max: 64 << 20}

// identRE matches a Verilog identifier (module, parameter and node names).
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*$`)

// Validate checks everything Simulate and Reference take from the design,
// so that a design.json written by hand or damaged is refused with what is
// wrong instead of panicking, running out of memory or simulating
// something else than it says: names are Verilog identifiers, formats 1 to
// MaxFormatWidth bits wide with 0 ≤ frac ≤ width, streams of 1 to
// MaxVectorSize elements whose parallelism divides them, layers of known
// ops chained size to size and format to format from the input to the
// output, Linear weights of OutSize × InSize values within their formats
// (at most MaxWeights) whose sums fit the model's 64-bit accumulator, and
// files named by local paths inside the design's folder.
func (d *Design) Validate() error {
	if !identRE.MatchString(d.Top) {
		return fmt.Errorf("top module name %q is not a Verilog identifier (allowed: a letter or _, then letters, digits, _ or $)", d.Top)
	}
	for _, s := range []struct {
		name string
		s    Stream
	}{{"input", d.Input}, {"output", d.Output}} {
		if err := checkStream(s.name, s.s); err != nil {
			return err
		}
	}
	if len(d.Layers) == 0 || len(d.Layers) > MaxLayers {
		return fmt.Errorf("%d layers (allowed: 1 to %d)", len(d.Layers), MaxLayers)
	}
	seen := map[string]bool{}
	size, format := d.Input.Size, d.Input.Format
	for i, l := range d.Layers {
		where := fmt.Sprintf("layer %d (%s)", i, l.Node)
		if !identRE.MatchString(l.Node) {
			return fmt.Errorf("layer %d: node name %q is not a Verilog identifier", i, l.Node)
		}
		if seen[l.Node] {
			return fmt.Errorf("%s: the node is listed twice (allowed: each layer once)", where)
		}
		seen[l.Node] = true
		if l.InSize != size {
			return fmt.Errorf("%s: in_size %d, but the stream before it carries %d elements", where, l.InSize, size)
		}
		if l.In != format {
			return fmt.Errorf("%s: input format %v, but the stream before it is %v", where, l.In, format)
		}
		if err := checkFormat(where+" output", l.Out); err != nil {
			return err
		}
		if err := checkSize(where+" out_size", l.OutSize); err != nil {
			return err
		}
		if err := checkLayer(where, l); err != nil {
			return err
		}
		for _, p := range l.Params {
			if !identRE.MatchString(p.Name) {
				return fmt.Errorf("%s: parameter name %q is not a Verilog identifier", where, p.Name)
			}
		}
		size, format = l.OutSize, l.Out
	}
	if size != d.Output.Size || format != d.Output.Format {
		return fmt.Errorf("the last layer gives %d elements of %v, but the output port takes %d of %v", size, format, d.Output.Size, d.Output.Format)
	}
	for _, p := range d.TopParams {
		if !identRE.MatchString(p.Name) {
			return fmt.Errorf("top parameter name %q is not a Verilog identifier", p.Name)
		}
	}
	if len(d.Sources) == 0 || d.Testbench == "" {
		return errors.New("no sources or no testbench named (allowed: the .sv files `mase emit` wrote)")
	}
	for _, f := range append(append(append([]string{}, d.Sources...), d.Testbench), d.ROMs...) {
		if !filepath.IsLocal(f) || strings.ContainsRune(f, 0) {
			return fmt.Errorf("file %q is not a path inside the design's folder (allowed: relative paths without ..)", f)
		}
	}
	return nil
}

// checkFormat refuses a format of no or too many bits, or a fraction
// outside the word.
func checkFormat(what string, f rtl.Format) error {
	if f.Width < 1 || f.Width > MaxFormatWidth || f.Frac < 0 || f.Frac > f.Width {
		return fmt.Errorf("%s: format %v (allowed: width 1 to %d, frac 0 to the width)", what, f, MaxFormatWidth)
	}
	return nil
}

// checkSize refuses a vector size out of 1..MaxVectorSize.
func checkSize(what string, n int) error {
	if n < 1 || n > MaxVectorSize {
		return fmt.Errorf("%s %d is out of range (allowed: 1 to %d)", what, n, MaxVectorSize)
	}
	return nil
}

// checkStream checks a port: its format, size and parallelism.
func checkStream(name string, s Stream) error {
	if err := checkFormat(name, s.Format); err != nil {
		return err
	}
	if err := checkSize(name+" size", s.Size); err != nil {
		return err
	}
	if s.Par0 < 1 || s.Par0 > s.Size || s.Size%s.Par0 != 0 || s.Par1 < 1 || s.Par1 > MaxVectorSize {
		return fmt.Errorf("%s parallelism %d × %d for %d elements (allowed: par0 a divisor of the size, par1 1 to %d)", name, s.Par0, s.Par1, s.Size, MaxVectorSize)
	}
	return nil
}

// checkLayer checks what the Go model of one layer reads.
func checkLayer(where string, l Layer) error {
	switch l.Op {
	case "linear":
		if l.WeightFormat == nil || l.BiasFormat == nil {
			return fmt.Errorf("%s: a linear layer without weight_format or bias_format", where)
		}
		if err := checkFormat(where+" weight", *l.WeightFormat); err != nil {
			return err
		}
		if err := checkFormat(where+" bias", *l.BiasFormat); err != nil {
			return err
		}
		if int64(l.InSize)*int64(l.OutSize) > MaxWeights {
			return fmt.Errorf("%s: %d × %d weights (allowed: at most %d)", where, l.OutSize, l.InSize, MaxWeights)
		}
		if len(l.Weight) != l.OutSize || len(l.Bias) != l.OutSize {
			return fmt.Errorf("%s: %d weight rows and %d biases for out_size %d", where, len(l.Weight), len(l.Bias), l.OutSize)
		}
		wf, bf := *l.WeightFormat, *l.BiasFormat
		for r, row := range l.Weight {
			if len(row) != l.InSize {
				return fmt.Errorf("%s: weight row %d has %d values for in_size %d", where, r, len(row), l.InSize)
			}
			for c, v := range row {
				if v < wf.Min() || v > wf.Max() {
					return fmt.Errorf("%s: weight [%d][%d] = %d is outside its format %v [%d, %d]", where, r, c, v, wf, wf.Min(), wf.Max())
				}
			}
		}
		for r, v := range l.Bias {
			if v < bf.Min() || v > bf.Max() {
				return fmt.Errorf("%s: bias [%d] = %d is outside its format %v [%d, %d]", where, r, v, bf, bf.Min(), bf.Max())
			}
		}
		// The model sums InSize products of In × Weight, aligned to the finer of the two fractions with the bias.
		accFrac := l.In.Frac + wf.Frac
		sumFrac := max(accFrac, bf.Frac)
		need := l.In.Width + wf.Width + bits.Len(uint(l.InSize)) + (sumFrac - accFrac)
		if biasNeed := bf.Width + sumFrac - bf.Frac; biasNeed > need {
			need = biasNeed
		}
		if need > accBits {
			return fmt.Errorf("%s: its sums need %d bits, more than the model's %d-bit accumulator (allowed: narrower formats or fewer inputs)", where, need, accBits)
		}
	case "relu", "leaky_relu":
		if l.InSize != l.OutSize {
			return fmt.Errorf("%s: %s maps %d elements to %d (allowed: as many out as in)", where, l.Op, l.InSize, l.OutSize)
		}
		if l.Op == "leaky_relu" {
			if l.SlopeFrac < 0 || l.SlopeFrac > MaxFormatWidth || l.SlopeValue < -(1<<31) || l.SlopeValue > 1<<31 {
				return fmt.Errorf("%s: slope %d / 2^%d (allowed: a value of at most 32 bits, frac 0 to %d)", where, l.SlopeValue, l.SlopeFrac, MaxFormatWidth)
			}
		}
	default:
		return fmt.Errorf("%s: op %q has no Go model (allowed: linear, relu, leaky_relu)", where, l.Op)
	}
	return nil
}
