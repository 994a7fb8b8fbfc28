package search

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/gomase/gomase/mase/search/studydata"
)

// System attributes the GridSampler records on each of its trials.
const (
	GridIDAttr          = "grid_id"
	gridFingerprintAttr = "grid"
)

// GridSampler evaluates every point of a grid (the Cartesian product of the
// values given per parameter) exactly once, in an order drawn at random from
// the seed, like Optuna's GridSampler: each trial takes a point that no
// finished, running or waiting trial of the study has taken, so a resumed
// study (or other workers sharing the storage) goes on with the points left,
// and a point whose trial crashed is tried again. A grid may be far larger
// than any study can walk (up to math.MaxInt points, e.g. a NAS space with
// a layer choice per Linear): picking a point costs the same whatever its
// size, and visiting it in random order is then sampling at random without
// repeating a point. The point is chosen under
// the storage's lock as the trial starts, so two workers never take the same
// one; a worker that finds every point left taken by running trials waits
// for them. Optimize stops once every point has been evaluated.
//
// Every parameter the objective suggests must be in the grid (else the trial
// fails with an error); grid values must suit the suggestion: numbers for
// SuggestFloat, integers for SuggestInt, one of the choices (by value) for
// SuggestCategorical. A numeric grid value outside the suggested range is
// used anyway, with a warning (as Optuna does).
type GridSampler struct {
	names  []string // sorted
	values [][]any  // values[i] are the grid values of names[i]
	total  int
	fp     string
	rng    *rand.Rand
}

// NewGridSampler returns a GridSampler over grid, which maps each parameter
// name to its values (nil, bool, string or Go numbers). seed fixes the order
// in which the points are visited.
func NewGridSampler(grid map[string][]any, seed int64) (*GridSampler, error) {
	g := &GridSampler{names: slices.Sorted(maps.Keys(grid)), total: 1, rng: newRNG(seed)}
	h := sha256.New()
	for _, name := range g.names {
		vals := grid[name]
		if len(vals) == 0 {
			return nil, fmt.Errorf("search: NewGridSampler: parameter %q has no values; give at least one", name)
		}
		enc := make([]studydata.WireChoice, len(vals))
		for i, v := range vals {
			wc, err := studydata.EncodeChoice(v)
			if err != nil {
				return nil, fmt.Errorf("search: NewGridSampler: parameter %q, value %d: %w", name, i, err)
			}
			enc[i] = wc
		}
		b, _ := json.Marshal(enc)
		fmt.Fprintf(h, "%q=%s;", name, b)
		g.values = append(g.values, slices.Clone(vals))
		if g.total > math.MaxInt/len(vals) {
			return nil, fmt.Errorf("search: NewGridSampler: the grid has more than %d points (math.MaxInt); use a smaller grid or another sampler", math.MaxInt)
		}
		g.total *= len(vals)
	}
	g.fp = hex.EncodeToString(h.Sum(nil))[:16]
	return g, nil
}

// Len returns the number of grid points.
func (g *GridSampler) Len() int { return g.total }

// Point returns the parameter values of grid point id (0 ≤ id < Len), in the
// order of itertools.product over the sorted names.
func (g *GridSampler) Point(id int) map[string]any {
	p := make(map[string]any, len(g.names))
	for i := len(g.names) - 1; i >= 0; i-- {
		n := len(g.values[i])
		p[g.names[i]] = g.values[i][id%n]
		id /= n
	}
	return p
}

func (g *GridSampler) value(id int, name string) (any, bool) {
	k, ok := slices.BinarySearch(g.names, name)
	if !ok {
		return nil, false
	}
	for i := len(g.names) - 1; i > k; i-- {
		id /= len(g.values[i])
	}
	return g.values[k][id%len(g.values[k])], true
}

// points sorts the grid points of the study's trials: visited (by a
// finished trial) and taken (by a running or waiting one). A trial failed by
// crash recovery does not count as a visit.
func (g *GridSampler) points(ts []studydata.FrozenTrial) (visited, taken map[int]bool) {
	visited, taken = map[int]bool{}, map[int]bool{}
	for i := range ts {
		t := &ts[i]
		if t.SystemAttrs[gridFingerprintAttr] != g.fp {
			continue
		}
		id, err := strconv.Atoi(t.SystemAttrs[GridIDAttr])
		if err != nil || id < 0 || id >= g.total {
			continue
		}
		switch {
		case t.State == studydata.Running || t.State == studydata.Waiting:
			taken[id] = true
		case t.Recovered:
		default:
			visited[id] = true
		}
	}
	return visited, taken
}

func (g *GridSampler) finite() {}

// listLimit is the largest grid whose free points startAttrs lists to draw
// one; a larger grid draws point ids until a free one comes up (each draw
// is free with probability above 1/2), so a grid of 10^17 points costs no
// more per trial than one of 10^3.
const listLimit = 1 << 20

// startAttrs gives a new trial a point that no trial has visited or taken,
// at random (uniformly among the free points). It runs under the storage's
// lock, so two workers cannot take one point. When every point left is
// taken by a running trial it returns ErrWait (that trial may fail and free
// it), and ErrStudyStopped when every point has been visited. A waiting
// trial that has a point already (a retry) or fixed parameters
// (EnqueueTrial) keeps them, as in Optuna.
func (g *GridSampler) startAttrs(_ *Study, ts []studydata.FrozenTrial, waiting *studydata.FrozenTrial) (map[string]string, error) {
	if waiting != nil {
		if _, ok := waiting.SystemAttrs[GridIDAttr]; ok {
			return nil, nil
		}
		if _, ok := waiting.SystemAttrs[studydata.FixedParamsAttr]; ok {
			return nil, nil
		}
	}
	visited, taken := g.points(ts)
	if used := len(visited) + len(taken); g.total > listLimit && used < g.total/2 {
		for {
			if id := g.rng.IntN(g.total); !visited[id] && !taken[id] {
				return map[string]string{gridFingerprintAttr: g.fp, GridIDAttr: strconv.Itoa(id)}, nil
			}
		}
	}
	var free []int
	for id := range g.total {
		if !visited[id] && !taken[id] {
			free = append(free, id)
		}
	}
	if len(free) == 0 {
		if len(visited) >= g.total {
			return nil, ErrStudyStopped
		}
		return nil, studydata.ErrWait
	}
	id := free[g.rng.IntN(len(free))]
	return map[string]string{gridFingerprintAttr: g.fp, GridIDAttr: strconv.Itoa(id)}, nil
}

// Sample returns the trial's grid value for name.
func (g *GridSampler) Sample(_ *Study, t *Trial, name string, dist studydata.Distribution) (float64, error) {
	ids, ok := t.systemAttr(GridIDAttr)
	if !ok {
		return 0, fmt.Errorf("trial %d has no grid point; a GridSampler samples only trials it started (through Optimize or Ask)", t.number)
	}
	id, _ := strconv.Atoi(ids)
	v, ok := g.value(id, name)
	if !ok {
		return 0, fmt.Errorf("parameter %q is not in the grid (grid parameters: %s); every parameter the objective suggests must be listed in the grid given to NewGridSampler",
			name, strings.Join(g.names, ", "))
	}
	x, err := dist.ToInternal(v)
	if err != nil {
		return 0, fmt.Errorf("grid value of parameter %q does not fit %v: %w", name, dist, err)
	}
	return x, nil
}
