package searchplot

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/ui/plot"
)

// trial makes a finished (or running) trial; value is NaN unless complete.
func trial(n int, st search.TrialState, v float64, attrs map[string]any) search.FrozenTrial {
	if st != search.Complete {
		v = math.NaN()
	}
	return search.FrozenTrial{Number: n, State: st, Value: v, UserAttrs: attrs}
}

// mixed holds, out of number order: a failed trial before the first
// completed one, a pruned and a running trial in the middle, and a
// complete trial whose value is worse than the best.
func mixed() []search.FrozenTrial {
	return []search.FrozenTrial{
		trial(3, search.Pruned, 0, nil),
		trial(0, search.Fail, 0, nil),
		trial(1, search.Complete, 0.5, map[string]any{"accuracy": 0.6}),
		trial(5, search.Complete, 0.9, map[string]any{"accuracy": 0.7}),
		trial(2, search.Complete, 0.4, map[string]any{"accuracy": 0.8}),
		trial(4, search.Running, 0, nil),
		trial(6, search.Complete, 0.3, nil),
	}
}

func TestBestSoFar(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dir    search.Direction
		m      Metric
		wx, wy []float64
	}{
		{"maximize", search.Maximize, nil, []float64{1, 2, 3, 5, 6}, []float64{0.5, 0.5, 0.5, 0.9, 0.9}},
		{"minimize", search.Minimize, Value, []float64{1, 2, 3, 5, 6}, []float64{0.5, 0.4, 0.4, 0.4, 0.3}},
		// Trial 6 has no accuracy: it keeps the best like a failed trial.
		{"attr", search.Maximize, UserAttr("accuracy"), []float64{1, 2, 3, 5, 6}, []float64{0.6, 0.8, 0.8, 0.8, 0.8}},
	} {
		in := mixed()
		keep := slicesCopy(in)
		x, y := BestSoFarOf(in, tc.dir, tc.m)
		if !reflect.DeepEqual(x, tc.wx) || !reflect.DeepEqual(y, tc.wy) {
			t.Errorf("%s: got x=%v y=%v, want x=%v y=%v", tc.name, x, y, tc.wx, tc.wy)
		}
		if !reflect.DeepEqual(numbers(in), numbers(keep)) {
			t.Errorf("%s: BestSoFarOf reordered its input", tc.name)
		}
	}
	if x, y := BestSoFar(mixed(), search.Maximize); !reflect.DeepEqual(y, []float64{0.5, 0.5, 0.5, 0.9, 0.9}) || len(x) != 5 {
		t.Errorf("BestSoFar = %v, %v", x, y)
	}
	for name, in := range map[string][]search.FrozenTrial{
		"nil":           nil,
		"none complete": {trial(0, search.Fail, 0, nil), trial(1, search.Pruned, 0, nil), trial(2, search.Running, 0, nil)},
	} {
		if x, y := BestSoFar(in, search.Maximize); x != nil || y != nil {
			t.Errorf("%s: BestSoFar = %v, %v, want nil, nil", name, x, y)
		}
	}
}

func slicesCopy(s []search.FrozenTrial) []search.FrozenTrial {
	return append([]search.FrozenTrial(nil), s...)
}

func numbers(s []search.FrozenTrial) []int {
	var n []int
	for _, t := range s {
		n = append(n, t.Number)
	}
	return n
}

func TestUserAttr(t *testing.T) {
	m := UserAttr("acc")
	for _, tc := range []struct {
		v    any
		want float64
		ok   bool
	}{
		{0.5, 0.5, true}, {float32(0.25), 0.25, true}, {3, 3, true}, {int64(4), 4, true}, {uint8(5), 5, true},
		{json.Number("0.75"), 0.75, true}, {json.Number("x"), 0, false}, {"0.5", 0, false}, {nil, 0, false},
	} {
		got, ok := m(search.FrozenTrial{State: search.Complete, UserAttrs: map[string]any{"acc": tc.v}})
		if got != tc.want || ok != tc.ok {
			t.Errorf("UserAttr of %#v = %v, %v, want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
	// A journal gives the attribute back as float64 from JSON.
	var attrs map[string]any
	if err := json.Unmarshal([]byte(`{"acc": 0.875}`), &attrs); err != nil {
		t.Fatal(err)
	}
	if v, ok := m(search.FrozenTrial{UserAttrs: attrs}); v != 0.875 || !ok {
		t.Errorf("UserAttr of a decoded journal attribute = %v, %v", v, ok)
	}
}

// checkSVG renders c and checks that it is XML holding every want.
func checkSVG(t *testing.T, svg []byte, err error, want ...string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := d.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
	for _, w := range want {
		if !bytes.Contains(svg, []byte(w)) {
			t.Errorf("SVG lacks %q", w)
		}
	}
}

func TestBestSoFarChart(t *testing.T) {
	studies := []Named{{Name: "TPE", Trials: mixed()}, {Name: "random", Trials: []search.FrozenTrial{trial(0, search.Complete, 0.2, nil), trial(1, search.Complete, 0.95, nil)}},
		{Name: "grid (all failed)", Trials: []search.FrozenTrial{trial(0, search.Fail, 0, nil)}}}
	c := BestSoFarChart("Task 1: best-so-far accuracy vs trial", search.Maximize, studies)
	if c.XLabel != "trial" || c.YLabel != "best accuracy so far" || len(c.Series) != 3 || c.Series[0].Dashed || !c.Series[1].Dashed {
		t.Fatalf("chart = %+v", c)
	}
	if s := c.Series[1]; s.Name != "random" || !reflect.DeepEqual(s.Y, []float64{0.2, 0.95}) || s.Scatter {
		t.Errorf("random series = %+v", s)
	}
	if len(c.Series[2].X) != 0 {
		t.Errorf("all-failed study has points %v", c.Series[2].X)
	}
	svg, err := plot.LineSVG(c)
	checkSVG(t, svg, err, "Task 1: best-so-far accuracy vs trial", ">TPE<", ">random<", "best accuracy so far")
	if bytes.Contains(svg, []byte("grid (all failed)")) {
		t.Error("a study with no completed trial got a legend entry")
	}

	c = BestSoFarChart("per precision", search.Minimize, studies[:1], WithMetric(UserAttr("accuracy")))
	if !reflect.DeepEqual(c.Series[0].Y, []float64{0.6, 0.6, 0.6, 0.6, 0.6}) {
		t.Errorf("minimize accuracy chart = %+v", c)
	}

	// Trials 0 to 5 that never beat the first: whole trial numbers on the
	// x axis, and a readable y range around the constant best (not the
	// ±1 gonum gives a flat line, with its negative accuracies).
	var flat []search.FrozenTrial
	for i := range 6 {
		flat = append(flat, trial(i, search.Complete, 0.6-0.01*float64(i), nil))
	}
	c = BestSoFarChart("flat", search.Maximize, []Named{{Name: "TPE", Trials: flat}})
	if !c.IntegerX {
		t.Error("best-so-far chart has no integer x axis")
	}
	svg, err = plot.LineSVG(c)
	checkSVG(t, svg, err, ">0<", ">1<", ">2<", ">3<", ">4<", ">5<", ">0.6<")
	for _, bad := range []string{">2.5<", ">2.50<", ">0.00<", ">-", ">1.5<"} {
		if bytes.Contains(svg, []byte(bad)) {
			t.Errorf("best-so-far chart of trials 0–5 with a constant best has tick label %q", bad)
		}
	}

	c = BestSoFarChart("empty", search.Maximize, nil)
	if len(c.Series) != 0 {
		t.Errorf("no studies gave series %+v", c.Series)
	}
	svg, err = plot.LineSVG(c)
	checkSVG(t, svg, err, "empty")
}

func TestTrialScatterChart(t *testing.T) {
	studies := []Named{{Name: "TPE", Trials: mixed()}, {Name: "random", Trials: []search.FrozenTrial{trial(1, search.Complete, 0.95, nil), trial(0, search.Complete, 0.2, nil)}}}
	c := TrialScatterChart("trials", studies)
	if len(c.Series) != 2 || c.YLabel != "accuracy" || c.XLabel != "trial" {
		t.Fatalf("chart = %+v", c)
	}
	tpe := c.Series[0]
	if !tpe.Scatter || tpe.Name != "TPE" || !reflect.DeepEqual(tpe.X, []float64{1, 2, 5, 6}) || !reflect.DeepEqual(tpe.Y, []float64{0.5, 0.4, 0.9, 0.3}) {
		t.Errorf("TPE scatter = %+v", tpe)
	}
	if r := c.Series[1]; !reflect.DeepEqual(r.X, []float64{0, 1}) || !reflect.DeepEqual(r.Y, []float64{0.2, 0.95}) {
		t.Errorf("random scatter not in trial order: %+v", r)
	}

	if !c.IntegerX {
		t.Error("trial scatter chart has no integer x axis")
	}
	svg, err := plot.LineSVG(c)
	checkSVG(t, svg, err, ">0<", ">6<")
	for _, bad := range []string{">2.5<", ">2.50<", ">0.00<", ">5.00<"} {
		if bytes.Contains(svg, []byte(bad)) {
			t.Errorf("trial scatter chart has tick label %q", bad)
		}
	}

	c = TrialScatterChart("trials and best", studies, WithBestSoFar(search.Maximize), WithMetric(UserAttr("accuracy")))
	if len(c.Series) != 4 {
		t.Fatalf("chart with best-so-far lines = %+v", c)
	}
	if s := c.Series[0]; !reflect.DeepEqual(s.Y, []float64{0.6, 0.8, 0.7}) {
		t.Errorf("accuracy scatter = %v", s.Y)
	}
	for i, line := range c.Series[2:] {
		if line.Scatter || line.Name != "" || line.Color != c.Series[i].Color {
			t.Errorf("best-so-far line %d = %+v, want an unnamed line in its study's colour %v", i, line, c.Series[i].Color)
		}
	}
	if !reflect.DeepEqual(c.Series[2].Y, []float64{0.6, 0.8, 0.8, 0.8, 0.8}) {
		t.Errorf("accuracy best-so-far = %v", c.Series[2].Y)
	}
	svg, err = plot.LineSVG(c)
	// The random study has no accuracy attribute: no points, no entry.
	checkSVG(t, svg, err, "trials and best", ">TPE<")
	if bytes.Contains(svg, []byte(">random<")) {
		t.Error("a study with no points got a legend entry")
	}
	if n := bytes.Count(svg, []byte(">TPE<")); n != 1 {
		t.Errorf("TPE has %d legend entries, want 1", n)
	}
}

func TestLayerTypeChart(t *testing.T) {
	counts := map[string]int{"LinearMinifloatDenorm": 2, "LinearInteger": 9, "Linear": 5, "LinearBlockFP": 0}
	c := LayerTypeChart("best model", counts)
	if want := []string{"Linear", "LinearBlockFP", "LinearInteger", "LinearMinifloatDenorm"}; !reflect.DeepEqual(c.Categories, want) {
		t.Errorf("categories = %v, want %v", c.Categories, want)
	}
	if len(c.Groups) != 1 || !reflect.DeepEqual(c.Groups[0].Values, []float64{5, 0, 9, 2}) {
		t.Errorf("groups = %+v", c.Groups)
	}
	svg, err := plot.BarSVG(c)
	checkSVG(t, svg, err, "best model", ">Linear<", ">LinearMinifloatDenorm<", ">9<")

	if c := LayerTypeChart("no Linear", map[string]int{"b": 1, "a": 2}); !reflect.DeepEqual(c.Categories, []string{"a", "b"}) {
		t.Errorf("categories = %v", c.Categories)
	}
	_, err = plot.BarSVG(LayerTypeChart("empty", nil))
	if err == nil || !strings.Contains(err.Error(), "no categories") {
		t.Errorf("empty counts: err = %v, want no categories", err)
	}
}

func TestLayerTypeCounts(t *testing.T) {
	want := map[string]int{"Linear": 5, "LinearInteger": 9}
	got, err := LayerTypeCounts(search.FrozenTrial{UserAttrs: map[string]any{"layer_types": map[string]int{"Linear": 5, "LinearInteger": 9}}})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("in-memory: %v, %v", got, err)
	}
	var attrs map[string]any
	if err := json.Unmarshal([]byte(`{"layer_types": {"Linear": 5, "LinearInteger": 9}}`), &attrs); err != nil {
		t.Fatal(err)
	}
	if got, err = LayerTypeCounts(search.FrozenTrial{UserAttrs: attrs}); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("from a journal: %v, %v", got, err)
	}
	for _, attrs := range []map[string]any{
		nil,
		{"layer_types": "Linear:5"},
		{"layer_types": map[string]any{"Linear": 1.5}},
		{"layer_types": map[string]int{"Linear": -1}},
	} {
		if _, err := LayerTypeCounts(search.FrozenTrial{Number: 7, UserAttrs: attrs}); err == nil || !strings.Contains(err.Error(), "trial 7") {
			t.Errorf("%v: err = %v, want an error naming the trial", attrs, err)
		}
	}
}

func TestParamsText(t *testing.T) {
	got := ParamsText(map[string]any{"num_layers": 1, "hidden_size": 0, "bert.pooler.dense_type": "linear"})
	want := "  bert.pooler.dense_type = linear\n  hidden_size = 0\n  num_layers = 1\n"
	if got != want {
		t.Errorf("ParamsText = %q, want %q", got, want)
	}
}
