// Package nas is Lab 2 (Tutorial 5): neural architecture search over
// BERT for sequence classification with the search library.
//
// MASE → gomase:
//
//	search_space = {...}                 nas.Tutorial5Space()
//	construct_model(trial)               Space.Build(trial, seed)
//	objective(trial)                     (&nas.Objective{...}).Run
//	GridSampler(search_space)            search.NewGridSampler(space.Grid(space.LinearChoices), seed)
//	CompressionPipeline()(mg, pass_args) passes.CompressionPipeline().Run(mg, args)
//	study.best_trial.user_attrs["model"] Objective.BestPath (the best model's checkpoint)
//
// The architecture parameters are suggested as indices into the space's
// lists, as in the tutorial, and every square Linear layer (in = out
// features) is kept or replaced by an Identity according to a categorical
// "<module path>_type" suggestion.
//
// Differences from MASE, on purpose: num_layers and num_heads change the
// model (MASE writes them to BertConfig attributes that BERT never reads,
// so its models always have 2 layers and 2 heads; Space.LikeMASE brings
// that behaviour back for comparison), and layer choices are the strings
// "linear" and "identity" rather than class objects, so a study journal
// can store them.
package nas

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/workmem"
)

// Layer choices for a square Linear.
const (
	KeepLinear = "linear"   // keep nn.Linear
	Identity   = "identity" // replace it by nn.Identity (forward(x) = x)
)

// Names of the architecture parameters (each suggested as an index).
const (
	NumLayersParam        = "num_layers"
	NumHeadsParam         = "num_heads"
	HiddenSizeParam       = "hidden_size"
	IntermediateSizeParam = "intermediate_size"
)

// LayerTypeSuffix ends the name of a layer-choice parameter:
// "bert.encoder.layer.0.attention.self.query_type".
const LayerTypeSuffix = "_type"

// Space is a BERT architecture search space.
type Space struct {
	NumLayers, NumHeads, HiddenSize, IntermediateSize []int
	// LinearChoices are the choices offered for every square Linear
	// (KeepLinear, Identity).
	LinearChoices []string
	// Base is the config the sampled sizes are written into (bert-tiny's
	// by default: vocabulary, dropout, 2 labels...).
	Base models.BertConfig
	// LikeMASE reproduces MASE's tutorial: num_layers and num_heads are
	// still suggested but the model keeps Base's layer and head counts.
	LikeMASE bool
}

// Tutorial5Space is the tutorial's space: num_layers {2, 4, 8}, num_heads
// {2, 4, 8, 16}, hidden_size {128, 192, 256, 384, 512}, intermediate_size
// {512, 768, 1024, 1536, 2048}, and Linear or Identity for every square
// Linear, on bert-tiny's config.
func Tutorial5Space() Space {
	return Space{
		NumLayers:        []int{2, 4, 8},
		NumHeads:         []int{2, 4, 8, 16},
		HiddenSize:       []int{128, 192, 256, 384, 512},
		IntermediateSize: []int{512, 768, 1024, 1536, 2048},
		LinearChoices:    []string{KeepLinear, Identity},
		Base:             models.BertTinyConfig(),
	}
}

// QuickSpace is the smaller space of quick mode (CI, the notebooks'
// quick runs): num_layers {1, 2}, num_heads {2, 4}, hidden_size {64, 128},
// intermediate_size {128, 256}, Linear or Identity for every square
// Linear. Its models train in seconds on two cores, and on a couple of
// thousand sentences their accuracies already differ.
func QuickSpace() Space {
	s := Tutorial5Space()
	s.NumLayers, s.NumHeads, s.HiddenSize, s.IntermediateSize = []int{1, 2}, []int{2, 4}, []int{64, 128}, []int{128, 256}
	return s
}

// params lists the architecture parameters with their values, in the
// order the constructor suggests them.
func (s Space) params() []struct {
	name   string
	values []int
	bound  limits.Int
} {
	return []struct {
		name   string
		values []int
		bound  limits.Int
	}{{NumLayersParam, s.NumLayers, limits.NumHiddenLayers}, {NumHeadsParam, s.NumHeads, limits.NumAttentionHeads},
		{HiddenSizeParam, s.HiddenSize, limits.HiddenSize}, {IntermediateSizeParam, s.IntermediateSize, limits.IntermediateSize}}
}

// Validate checks that every list has positive values, that every hidden
// size divides by every head count the model can get, and that the layer
// choices are known.
func (s Space) Validate() error {
	for _, p := range s.params() {
		if len(p.values) == 0 {
			return fmt.Errorf("nas: %s has no values", p.name)
		}
		for _, v := range p.values {
			if v <= 0 {
				return fmt.Errorf("nas: %s value %d is not positive", p.name, v)
			}
			if err := p.bound.CheckAs(p.name, v); err != nil {
				return fmt.Errorf("nas: %w", err)
			}
		}
	}
	heads := s.NumHeads
	if s.LikeMASE {
		heads = []int{s.Base.NumAttentionHeads}
	}
	for _, h := range s.HiddenSize {
		for _, n := range heads {
			if h%n != 0 {
				return fmt.Errorf("nas: hidden_size %d is not a multiple of num_heads %d (BERT splits the hidden size across heads)", h, n)
			}
		}
	}
	if len(s.LinearChoices) == 0 {
		return fmt.Errorf("nas: no layer choices (allowed: %s, %s)", KeepLinear, Identity)
	}
	for _, c := range s.LinearChoices {
		if c != KeepLinear && c != Identity {
			return fmt.Errorf("nas: unknown layer choice %q (allowed: %s, %s)", c, KeepLinear, Identity)
		}
	}
	if s.Base.VocabSize == 0 {
		return fmt.Errorf("nas: Space.Base is empty; start from models.BertTinyConfig()")
	}
	// The largest model the space holds must fit, before any trial builds
	// one, and train: its weights, gradients and AdamW's two moments.
	largest := s.Base
	largest.NumHiddenLayers, largest.HiddenSize, largest.IntermediateSize = slices.Max(s.NumLayers), slices.Max(s.HiddenSize), slices.Max(s.IntermediateSize)
	largest.NumAttentionHeads = slices.Min(heads)
	if err := largest.Validate(); err != nil {
		return fmt.Errorf("nas: the largest model of the space: %w", err)
	}
	one := limits.Dim{Name: "batch", N: 1}
	e := workmem.BertTraining(largest, workmem.Training{Batch: one, Seq: one, EvalBatch: one, Where: trialWhere})
	return e.Check("nas: training the largest model of the space")
}

// trialWhere is where a trial keeps its model: the weights on the host
// and the backend.
var trialWhere = workmem.Where{WeightCopies: 2}

// CheckTraining checks, before the first trial, that the space's largest
// trial trains within the memory bounds at the given batch, sequence
// length and evaluation batch (their names are the flags that set them):
// workmem.BertTraining of the most layers, the largest hidden and
// intermediate sizes and the most heads (which size the attention
// scores), one of the space's architectures. onDevice says the backend
// keeps the activations in an accelerator's memory.
func (s Space) CheckTraining(batch, seq, evalBatch limits.Dim, onDevice bool) error {
	if err := s.Validate(); err != nil {
		return err
	}
	heads := s.NumHeads
	if s.LikeMASE {
		heads = []int{s.Base.NumAttentionHeads}
	}
	c := s.config(slices.Max(s.NumLayers), slices.Max(heads), slices.Max(s.HiddenSize), slices.Max(s.IntermediateSize))
	w := trialWhere
	w.OnDevice = onDevice
	e := workmem.BertTraining(c, workmem.Training{Batch: batch, Seq: seq, EvalBatch: evalBatch, Where: w})
	return e.Check(fmt.Sprintf("nas: the space's largest trial (%d layers, hidden %d, intermediate %d, %d heads) at %s %d, %s %d",
		c.NumHiddenLayers, c.HiddenSize, c.IntermediateSize, c.NumAttentionHeads, batch.Name, batch.N, seq.Name, seq.N))
}

// Architecture is what Build made for a trial.
type Architecture struct {
	Config models.BertConfig `json:"config"`
	// SquareLinears are the module paths of the square Linear layers, in
	// the order their choices were suggested; Identities those replaced.
	SquareLinears []string `json:"square_linears"`
	Identities    []string `json:"identities"`
	Parameters    int      `json:"parameters"`
}

// config returns the BERT config of the given sizes.
func (s Space) config(layers, heads, hidden, intermediate int) models.BertConfig {
	c := s.Base
	c.HiddenSize, c.IntermediateSize = hidden, intermediate
	if !s.LikeMASE {
		c.NumHiddenLayers, c.NumAttentionHeads = layers, heads
	}
	return c
}

// Build is the tutorial's construct_model: it suggests the four
// architecture indices, builds the model (random initialisation from
// seed), then suggests a layer choice for every square Linear in module
// order and replaces those that get Identity.
func (s Space) Build(t *search.Trial, seed uint64) (*nn.Model, Architecture, error) {
	if err := s.Validate(); err != nil {
		return nil, Architecture{}, err
	}
	var v [4]int
	for i, p := range s.params() {
		idx, err := t.SuggestInt(p.name, 0, len(p.values)-1)
		if err != nil {
			return nil, Architecture{}, err
		}
		v[i] = p.values[idx]
	}
	arch := Architecture{Config: s.config(v[0], v[1], v[2], v[3])}
	m, err := models.NewBertForSequenceClassification(arch.Config, seed)
	if err != nil {
		return nil, Architecture{}, err
	}
	arch.SquareLinears = squareLinears(m)
	for _, path := range arch.SquareLinears {
		choice, err := search.Categorical(t, path+LayerTypeSuffix, s.LinearChoices)
		if err != nil {
			return nil, Architecture{}, err
		}
		if choice == Identity {
			if err := m.ReplaceModule(path, nn.NewIdentity(), nil, 0); err != nil {
				return nil, Architecture{}, err
			}
			arch.Identities = append(arch.Identities, path)
		}
	}
	arch.Parameters = m.NumParameters("")
	return m, arch, nil
}

// squareLinears lists the paths of the Linear modules with as many input
// as output features, in module order.
func squareLinears(m *nn.Model) []string {
	var out []string
	for _, nm := range m.Modules() {
		if l, ok := nm.Module.(*nn.Linear); ok && l.InFeatures == l.OutFeatures {
			out = append(out, nm.Path)
		}
	}
	return out
}

// squarePaths returns the square Linear paths of the config's model
// without building it: per layer Q, K, V and attention.output.dense (and
// intermediate.dense and output.dense when hidden = intermediate), then
// the pooler.
func squarePaths(c models.BertConfig) []string {
	var out []string
	for i := 0; i < c.NumHiddenLayers; i++ {
		p := fmt.Sprintf("bert.encoder.layer.%d.", i)
		out = append(out, p+"attention.self.query", p+"attention.self.key", p+"attention.self.value", p+"attention.output.dense")
		if c.HiddenSize == c.IntermediateSize {
			out = append(out, p+"intermediate.dense", p+"output.dense")
		}
	}
	return append(out, "bert.pooler.dense")
}

// architectures calls f with the config of every index combination.
func (s Space) architectures(f func(models.BertConfig)) {
	for _, l := range s.NumLayers {
		for _, h := range s.NumHeads {
			for _, d := range s.HiddenSize {
				for _, i := range s.IntermediateSize {
					f(s.config(l, h, d, i))
				}
			}
		}
	}
}

// Size returns the number of index combinations (300 for Tutorial 5) and
// the exact number of distinct trials counting the layer choices: each
// combination contributes len(LinearChoices)^(its square Linears). (MASE's
// tutorial quotes 300 × 2^9 = 153,600, counting 9 square Linears
// everywhere; with LikeMASE the exact figure is 245,760, because the 12
// combinations with hidden = intermediate = 512 have 13.)
func (s Space) Size() (architectures int, withLayerChoices *big.Int) {
	total := new(big.Int)
	choices := big.NewInt(int64(len(s.LinearChoices)))
	s.architectures(func(c models.BertConfig) {
		architectures++
		total.Add(total, new(big.Int).Exp(choices, big.NewInt(int64(len(squarePaths(c)))), nil))
	})
	return architectures, total
}

// Grid returns the full grid for search.NewGridSampler: every index of
// the four architecture parameters, and for every square Linear name any
// architecture can suggest, the given layer choices (nil: KeepLinear
// only, the architectures alone). Given the space's LinearChoices it is
// the whole space, the one Random and TPE sample: for Tutorial5Space 300
// index combinations × 2^49 layer choices (49 square Linear names: 8
// layers × 6 + the pooler), about 1.7·10^17 points, which the
// GridSampler visits in random order without repeats. A trial suggests
// only the names of its own architecture, so the grid points that differ
// in the other names build the same model; every architecture has equally
// many points, so a grid walk draws architectures and layer choices as
// uniformly as the RandomSampler does.
func (s Space) Grid(layerChoices []string) (map[string][]any, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if len(layerChoices) == 0 {
		layerChoices = []string{KeepLinear}
	}
	for _, c := range layerChoices {
		if !slices.Contains(s.LinearChoices, c) {
			return nil, fmt.Errorf("nas: grid layer choice %q is not one of the space's choices (%s)", c, strings.Join(s.LinearChoices, ", "))
		}
	}
	grid := map[string][]any{}
	for _, p := range s.params() {
		idx := make([]any, len(p.values))
		for i := range idx {
			idx[i] = i
		}
		grid[p.name] = idx
	}
	choices := make([]any, len(layerChoices))
	for i, c := range layerChoices {
		choices[i] = c
	}
	s.architectures(func(c models.BertConfig) {
		for _, path := range squarePaths(c) {
			grid[path+LayerTypeSuffix] = choices
		}
	})
	return grid, nil
}
