package mixedprecision

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/quantized"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/quant"
	"github.com/gomase/gomase/mase/search"
)

// Default fixed widths of a Space (the lab's integer 8/4).
const (
	// DefaultWidth is the width of a Space whose Width is 0.
	DefaultWidth = 8
	// DefaultFracWidth is the integer fractional width of a Space whose
	// FracWidth is 0.
	DefaultFracWidth = 4
)

// Space is the search space of a mixed-precision search: which types each
// Linear-like layer may take and at which widths.
//
// Every Linear-like layer suggests "<module path>_type" from Choices (e.g.
// "bert.encoder.layer.0.attention.self.query_type"). A layer whose choice
// is integer also suggests "<path>_width" from Widths and
// "<path>_frac_width" from FracWidths when those are non-empty (Task 1);
// otherwise it uses the fixed Width and FracWidth. Every other format uses
// the fixed Width (FormatConfig).
//
// Integer pairs with frac_width = width are allowed (Task 1's 8/8 holds
// values in [−0.5, 0.5) in steps of 2^−8); frac_width > width is rejected
// by Validate, since gomase's integer format keeps the fraction inside the
// word (MASE would build a quantizer whose range is below ±2^−1).
type Space struct {
	// Choices are the types a layer may take: Linear ("linear": leave it as
	// it is) or names from Formats. Order matters for samplers (a choice is
	// drawn by index).
	Choices []string
	// Widths and FracWidths, when non-empty, are the per-layer integer
	// widths and fractional widths searched (Task 1: 8, 16, 32 and 2, 4, 8).
	Widths, FracWidths []int
	// Width and FracWidth are the fixed widths used otherwise; 0 means
	// DefaultWidth (8) and DefaultFracWidth (4). FracWidth is read only by
	// integer; to search or fix a fractional width of 0 use FracWidths {0}.
	Width, FracWidth int
}

// Task1Space is Lab 3 Task 1's space: each layer float or integer, integer
// layers with width ∈ {8, 16, 32} and frac_width ∈ {2, 4, 8}.
func Task1Space() Space {
	return Space{Choices: []string{Linear, quant.Integer}, Widths: []int{8, 16, 32}, FracWidths: []int{2, 4, 8}}
}

// FormatSpace is one curve of Lab 3 Task 2: each layer float or the given
// format at 8 bits (integer 8/4).
func FormatSpace(format string) Space {
	return Space{Choices: []string{Linear, format}, Width: DefaultWidth, FracWidth: DefaultFracWidth}
}

// AllFormatsSpace is Task 2's mixed space: each layer float or any of
// Formats, at 8 bits (integer 8/4).
func AllFormatsSpace() Space {
	return Space{Choices: append([]string{Linear}, Formats...), Width: DefaultWidth, FracWidth: DefaultFracWidth}
}

// width is the fixed width.
func (s Space) width() int {
	if s.Width == 0 {
		return DefaultWidth
	}
	return s.Width
}

// fracWidth is the fixed fractional width.
func (s Space) fracWidth() int {
	if s.FracWidth == 0 {
		return DefaultFracWidth
	}
	return s.FracWidth
}

// intWidths are the integer widths the space can draw.
func (s Space) intWidths() []int {
	if len(s.Widths) > 0 {
		return s.Widths
	}
	return []int{s.width()}
}

// intFracWidths are the integer fractional widths the space can draw.
func (s Space) intFracWidths() []int {
	if len(s.FracWidths) > 0 {
		return s.FracWidths
	}
	return []int{s.fracWidth()}
}

// Validate checks the space: at least one choice, each Linear or one of
// Formats and none twice; widths 1..32 and fractional widths ≥ 0, none
// twice; searched widths only with integer among the choices; every
// (width, frac_width) pair the space can draw with frac_width ≤ width; and
// every chosen format valid at its width (FormatConfig: log and block_log
// take at most 11 bits, say).
func (s Space) Validate() error {
	allowed := strings.Join(append([]string{Linear}, Formats...), ", ")
	if len(s.Choices) == 0 {
		return fmt.Errorf("mixedprecision: Space.Choices is empty (allowed: %s)", allowed)
	}
	for i, c := range s.Choices {
		if c != Linear && !slices.Contains(Formats, c) {
			return fmt.Errorf("mixedprecision: Space.Choices[%d] %q is not a choice (allowed: %s)", i, c, allowed)
		}
		if slices.Index(s.Choices, c) != i {
			return fmt.Errorf("mixedprecision: Space.Choices lists %q twice", c)
		}
	}
	if s.Width < 0 || s.Width > 32 {
		return fmt.Errorf("mixedprecision: Space.Width %d is out of range (allowed: 1..32, or 0 for %d)", s.Width, DefaultWidth)
	}
	if s.FracWidth < 0 || s.FracWidth > 32 {
		return fmt.Errorf("mixedprecision: Space.FracWidth %d is out of range (allowed: 0..32, 0 meaning %d)", s.FracWidth, DefaultFracWidth)
	}
	for i, w := range s.Widths {
		if w < 1 || w > 32 {
			return fmt.Errorf("mixedprecision: Space.Widths[%d] %d is out of range (allowed: 1..32)", i, w)
		}
		if slices.Index(s.Widths, w) != i {
			return fmt.Errorf("mixedprecision: Space.Widths lists %d twice", w)
		}
	}
	for i, f := range s.FracWidths {
		if f < 0 || f > 32 {
			return fmt.Errorf("mixedprecision: Space.FracWidths[%d] %d is out of range (allowed: 0..32, at most the smallest width)", i, f)
		}
		if slices.Index(s.FracWidths, f) != i {
			return fmt.Errorf("mixedprecision: Space.FracWidths lists %d twice", f)
		}
	}
	hasInt := slices.Contains(s.Choices, quant.Integer)
	if (len(s.Widths) > 0 || len(s.FracWidths) > 0) && !hasInt {
		return fmt.Errorf("mixedprecision: Space.Widths/FracWidths are searched only for integer layers, but Choices %v has no %q (add it, or leave the lists empty)",
			s.Choices, quant.Integer)
	}
	if hasInt {
		minW, maxF := slices.Min(s.intWidths()), slices.Max(s.intFracWidths())
		if maxF > minW {
			return fmt.Errorf("mixedprecision: the space can draw integer width %d with frac_width %d; every pair must have frac_width ≤ width (allowed: fractional widths ≤ %d, the smallest width)",
				minW, maxF, minW)
		}
		for _, w := range s.intWidths() {
			for _, f := range s.intFracWidths() {
				if _, err := FormatConfig(quant.Integer, w, f); err != nil {
					return err
				}
			}
		}
	}
	for _, c := range s.Choices {
		if c == Linear || c == quant.Integer {
			continue
		}
		if _, err := FormatConfig(c, s.width(), s.fracWidth()); err != nil {
			return fmt.Errorf("%w (set Space.Width to a width the format takes)", err)
		}
	}
	return nil
}

// LayerChoice is what a trial chose for one Linear-like layer.
type LayerChoice struct {
	// Path is the module path ("bert.encoder.layer.0.attention.self.query");
	// the trial's parameter is Path + "_type".
	Path string `json:"path"`
	// Node is the call_module node's name, the key QuantizeTransform matches
	// by name ("bert_encoder_layer_0_attention_self_query").
	Node string `json:"node"`
	// Choice is Linear or a format name.
	Choice string `json:"choice"`
	// Width and FracWidth are the widths the layer was quantized with:
	// Width 0 for Linear and for the fixed-width formats (binary,
	// binary_scaling, binary_residual, ternary, mxint8); FracWidth only
	// for integer.
	Width     int `json:"width,omitempty"`
	FracWidth int `json:"frac_width,omitempty"`
	// Class is the layer's MASE class after Apply ("Linear",
	// "LinearInteger", ...).
	Class string `json:"class"`
}

// Summary is what Space.Apply did to a graph.
type Summary struct {
	// Layers lists every Linear-like layer in graph order.
	Layers []LayerChoice `json:"layers"`
	// Quantized counts the layers that are quantized after Apply (of any
	// class other than the float Linear); Total counts every layer.
	Quantized int `json:"quantized"`
	Total     int `json:"total"`
}

// String is the HEAD script's line, "Quantized layers: k/N".
func (s Summary) String() string {
	return fmt.Sprintf("Quantized layers: %d/%d", s.Quantized, s.Total)
}

// linearLayer is a call_module node of a Linear-like module.
type linearLayer struct {
	node   *ir.Node
	module nn.Module
}

// linearLayers lists the call_module nodes whose module is a Linear or a
// quantized Linear, in graph order, once per module.
func linearLayers(mg *ir.MaseGraph) ([]linearLayer, error) {
	if mg == nil || mg.Graph == nil || mg.Model == nil {
		return nil, errors.New("mixedprecision: the graph is nil")
	}
	var out []linearLayer
	seen := map[string]bool{}
	for _, n := range mg.Graph.Nodes() {
		if n.Op != ir.CallModule || seen[n.Target] {
			continue
		}
		mod, ok := mg.Model.Module(n.Target)
		if !ok {
			return nil, fmt.Errorf("mixedprecision: node %s calls module %q, which the model does not have", n.Name, n.Target)
		}
		switch mod.(type) {
		case *nn.Linear, *quantized.Linear:
			seen[n.Target] = true
			out = append(out, linearLayer{node: n, module: mod})
		}
	}
	return out, nil
}

// LayerTypes counts the graph's Linear-like layers (the modules of its
// call_module nodes that are a Linear or a quantized Linear) by MASE class
// name: "Linear" for float, "LinearInteger", "LinearMinifloatIEEE", ...
// It returns nil for a nil graph.
func LayerTypes(mg *ir.MaseGraph) map[string]int {
	layers, err := linearLayers(mg)
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, l := range layers {
		out[l.module.TypeName()]++
	}
	return out
}

// Grid returns the GridSampler grid of the space on mg: every parameter
// Apply can suggest ("<path>_type", and for integer "<path>_width" and
// "<path>_frac_width" when searched) with its values. Optuna's GridSampler
// fails on a suggested name missing from the grid, so the grid must list
// them all. The product grows fast (2^14 points for a two-choice space on
// bert-tiny); search.NewGridSampler rejects grids over 2^31 points.
func (s Space) Grid(mg *ir.MaseGraph) (map[string][]any, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	layers, err := linearLayers(mg)
	if err != nil {
		return nil, err
	}
	anys := func(xs []int) []any {
		out := make([]any, len(xs))
		for i, x := range xs {
			out[i] = x
		}
		return out
	}
	grid := map[string][]any{}
	for _, l := range layers {
		path := l.node.Target
		for _, c := range s.Choices {
			grid[path+"_type"] = append(grid[path+"_type"], c)
		}
		if len(s.Widths) > 0 {
			grid[path+"_width"] = anys(s.Widths)
		}
		if len(s.FracWidths) > 0 {
			grid[path+"_frac_width"] = anys(s.FracWidths)
		}
	}
	return grid, nil
}

// EveryLayer returns the parameters that give every Linear-like layer of
// mg the type choice (one of Choices), for Study.EnqueueTrial: Lab 3 Task
// 2 starts each format's study with that trial, so that every format is
// also measured on the same layers and the formats can be ranked on it.
// Searched widths are left to the sampler.
func (s Space) EveryLayer(mg *ir.MaseGraph, choice string) (map[string]any, error) {
	if !slices.Contains(s.Choices, choice) {
		return nil, fmt.Errorf("mixedprecision: EveryLayer: %q is not a choice of the space (allowed: %s)", choice, strings.Join(s.Choices, ", "))
	}
	grid, err := s.Grid(mg)
	if err != nil {
		return nil, err
	}
	params := map[string]any{}
	for name := range grid {
		if strings.HasSuffix(name, "_type") {
			params[name] = choice
		}
	}
	return params, nil
}

// Apply is Tutorial 6's construct_model on a graph: for every Linear-like
// layer in graph order it suggests "<path>_type" from Choices (and, for an
// integer layer, "<path>_width" and "<path>_frac_width" when searched),
// then quantizes the chosen layers with one passes.QuantizeTransform call
// (by node name). A quantized layer keeps the original weight and bias
// (MASE's constructor re-initialises the bias); an already quantized layer
// chosen as a format is re-quantized from its float weights, one chosen as
// Linear is left as it is.
//
// It modifies mg and returns it with the summary, and records the trial
// attribute "quantized_layers" = "k/N". On an error the trial may already
// hold some of its suggestions, and the graph is left unquantized
// (QuantizeTransform checks every config before changing the graph).
func (s Space) Apply(t *search.Trial, mg *ir.MaseGraph) (*ir.MaseGraph, Summary, error) {
	if t == nil {
		return nil, Summary{}, errors.New("mixedprecision: Apply: the trial is nil")
	}
	if err := s.Validate(); err != nil {
		return nil, Summary{}, err
	}
	layers, err := linearLayers(mg)
	if err != nil {
		return nil, Summary{}, err
	}
	if len(layers) == 0 {
		return nil, Summary{}, errors.New("mixedprecision: Apply: the graph has no Linear layer to search over")
	}
	var sum Summary
	var entries []passes.QuantizeEntry
	for _, l := range layers {
		path := l.node.Target
		choice, err := search.Categorical(t, path+"_type", s.Choices)
		if err != nil {
			return nil, Summary{}, err
		}
		lc := LayerChoice{Path: path, Node: l.node.Name, Choice: choice}
		if choice != Linear {
			lc.Width = s.width()
			if choice == quant.Integer {
				lc.FracWidth = s.fracWidth()
				if len(s.Widths) > 0 {
					if lc.Width, err = search.Categorical(t, path+"_width", s.Widths); err != nil {
						return nil, Summary{}, err
					}
				}
				if len(s.FracWidths) > 0 {
					if lc.FracWidth, err = search.Categorical(t, path+"_frac_width", s.FracWidths); err != nil {
						return nil, Summary{}, err
					}
				}
			}
			cfg, err := FormatConfig(choice, lc.Width, lc.FracWidth)
			if err != nil {
				return nil, Summary{}, fmt.Errorf("mixedprecision: layer %s: %w", path, err)
			}
			entries = append(entries, passes.QuantizeEntry{Key: l.node.Name, Config: cfg})
			if fixedWidth(choice) {
				lc.Width = 0
			}
		}
		sum.Layers = append(sum.Layers, lc)
	}
	if len(entries) > 0 {
		if mg, _, err = passes.QuantizeTransform(mg, passes.QuantizeArgs{By: "name", Entries: entries}); err != nil {
			return nil, Summary{}, fmt.Errorf("mixedprecision: %w", err)
		}
	}
	for i := range sum.Layers {
		l := &sum.Layers[i]
		mod, _ := mg.Model.Module(l.Path)
		l.Class = mod.TypeName()
		if _, float := mod.(*nn.Linear); !float {
			sum.Quantized++
		}
	}
	sum.Total = len(sum.Layers)
	if err := t.SetUserAttr("quantized_layers", fmt.Sprintf("%d/%d", sum.Quantized, sum.Total)); err != nil {
		return nil, Summary{}, err
	}
	return mg, sum, nil
}

// fixedWidth reports whether a format ignores FormatConfig's width.
func fixedWidth(format string) bool {
	switch format {
	case quant.Binary, quant.BinaryScaling, quant.BinaryResidual, quant.Ternary, quant.MXInt8:
		return true
	}
	return false
}
