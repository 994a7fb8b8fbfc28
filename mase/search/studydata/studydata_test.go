package studydata

import (
	"math"
	"strings"
	"testing"
)

func TestDirectionsAndStates(t *testing.T) {
	for in, want := range map[string]Direction{"minimize": Minimize, "min": Minimize, "maximize": Maximize, "max": Maximize} {
		if d, err := ParseDirection(in); err != nil || d != want {
			t.Errorf("ParseDirection(%q) = %v, %v", in, d, err)
		}
	}
	if _, err := ParseDirection("up"); err == nil || !strings.Contains(err.Error(), "allowed: minimize, maximize") {
		t.Errorf("ParseDirection(up): %v", err)
	}
	if !Maximize.Better(2, 1) || Minimize.Better(2, 1) || Minimize.Better(1, 1) {
		t.Error("Better compares the wrong way")
	}
	for _, s := range []TrialState{Running, Complete, Pruned, Fail, Waiting} {
		if got, err := ParseTrialState(s.String()); err != nil || got != s {
			t.Errorf("ParseTrialState(%q) = %v, %v", s, got, err)
		}
		if s.IsFinished() != (s == Complete || s == Pruned || s == Fail) {
			t.Errorf("%v.IsFinished() = %v", s, s.IsFinished())
		}
	}
	if _, err := ParseTrialState("done"); err == nil {
		t.Error(`ParseTrialState("done"): no error`)
	}
}

// TestDistributionsRoundTrip: every kind of distribution survives
// MarshalDistribution and UnmarshalDistribution, choices keeping their Go
// types, and maps internal values to external ones as documented.
func TestDistributionsRoundTrip(t *testing.T) {
	cd := CategoricalDistribution{Choices: []any{4, 2.5, "relu", true, nil, int8(-3), uint16(7)}}
	for _, d := range []Distribution{
		FloatDistribution{Low: 1e-5, High: 0.1, Log: true},
		FloatDistribution{Low: 0, High: 1, Step: 0.25},
		IntDistribution{Low: 2, High: 64, Step: 2},
		IntDistribution{Low: 1, High: 1024, Step: 1, Log: true},
		cd,
	} {
		b, err := MarshalDistribution(d)
		if err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		back, err := UnmarshalDistribution(b)
		if err != nil || !back.Equal(d) || back.String() != d.String() {
			t.Errorf("%v → %s → %v, %v", d, b, back, err)
		}
	}
	back, _ := UnmarshalDistribution(mustMarshal(t, cd))
	for i, c := range back.(CategoricalDistribution).Choices {
		if c != cd.Choices[i] {
			t.Errorf("choice %d came back as %#v (%T), want %#v (%T)", i, c, c, cd.Choices[i], cd.Choices[i])
		}
	}
	if cd.ToExternal(2) != "relu" || cd.Index(2.5) != 1 || cd.Index(4.0) != 0 || cd.Index("gelu") != -1 {
		t.Error("categorical internal/external mapping is wrong")
	}
	if x, err := (IntDistribution{Low: 0, High: 9, Step: 3}).ToInternal(6); err != nil || x != 6 {
		t.Errorf("int ToInternal(6) = %v, %v", x, err)
	}
	f := FloatDistribution{Low: 0, High: 1, Step: 0.3}
	if !f.AdjustHigh() || math.Abs(f.High-0.9) > 1e-12 {
		t.Errorf("AdjustHigh moved High to %v, want 0.9", f.High)
	}
	for _, bad := range []string{
		`{"type":"float","low":1,"high":0}`,
		`{"type":"float","low":0,"high":1,"log":true}`,
		`{"type":"int","low":1,"high":4,"step":0}`,
		`{"type":"categorical"}`,
		`{"type":"normal","low":0,"high":1}`,
		`{"type":"categorical","choices":[["complex128",1]]}`,
	} {
		if d, err := UnmarshalDistribution([]byte(bad)); err == nil {
			t.Errorf("%s: accepted as %v", bad, d)
		}
	}
}

func mustMarshal(t *testing.T, d Distribution) []byte {
	t.Helper()
	b, err := MarshalDistribution(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRetryOf: a retry keeps the parameters and attributes, names the
// original trial and the attempts so far, and stops after retries.
func TestRetryOf(t *testing.T) {
	failed := NormalizeAdded(FrozenTrial{Number: 3, State: Fail, Message: "boom",
		Distributions:  map[string]Distribution{"lr": FloatDistribution{Low: 0, High: 1}},
		InternalParams: map[string]float64{"lr": 0.5}, UserAttrs: map[string]any{"note": "x"}})
	r, ok := RetryOf(failed, 2)
	if !ok || r.State != Waiting || r.Params["lr"] != 0.5 || r.UserAttrs["note"] != "x" || r.Message != "" ||
		r.SystemAttrs[FailedTrialAttr] != "3" || r.SystemAttrs[RetryHistoryAttr] != "[3]" || !math.IsNaN(r.Value) {
		t.Fatalf("retry of trial 3: %+v, %v", r, ok)
	}
	if failed.SystemAttrs[FailedTrialAttr] != "" {
		t.Error("RetryOf changed the failed trial's attributes")
	}
	again := r
	again.Number, again.State = 7, Fail
	r2, ok := RetryOf(again, 2)
	if !ok || r2.SystemAttrs[FailedTrialAttr] != "3" || r2.SystemAttrs[RetryHistoryAttr] != "[3,7]" {
		t.Fatalf("retry of the retry: %v, %v", r2.SystemAttrs, ok)
	}
	r2.Number, r2.State = 9, Fail
	if _, ok := RetryOf(r2, 2); ok {
		t.Error("a third retry with retries = 2")
	}
	if _, ok := RetryOf(failed, 0); ok {
		t.Error("a retry with retries = 0")
	}
}

// TestCheckAdded refuses a trial given whole that a storage could not keep.
func TestCheckAdded(t *testing.T) {
	d := FloatDistribution{Low: 0, High: 1}
	ok := FrozenTrial{State: Complete, Value: 1, Distributions: map[string]Distribution{"x": d}, InternalParams: map[string]float64{"x": 0.5}}
	if err := CheckAdded(&ok); err != nil {
		t.Fatalf("a complete trial: %v", err)
	}
	for name, ft := range map[string]FrozenTrial{
		"running":          {State: Running},
		"complete NaN":     {State: Complete, Value: math.NaN()},
		"no value":         {State: Waiting, Distributions: map[string]Distribution{"x": d}},
		"no distribution":  {State: Waiting, InternalParams: map[string]float64{"x": 0.5}},
		"bad distribution": {State: Waiting, Distributions: map[string]Distribution{"x": FloatDistribution{Low: 1, High: 0}}, InternalParams: map[string]float64{"x": 0.5}},
	} {
		if err := CheckAdded(&ft); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestAdjustHighAsOptuna: a stepped range whose high is off the grid ends
// where Optuna's decimal arithmetic puts it (0.9 for [0, 1] step 0.3, not
// 0.8999999999999999), a range on the grid is left alone, and an int range
// too wide for int arithmetic is adjusted without overflowing.
func TestAdjustHighAsOptuna(t *testing.T) {
	for _, c := range []struct {
		d       FloatDistribution
		want    float64
		changed bool
	}{
		{FloatDistribution{Low: 0, High: 1, Step: 0.3}, 0.9, true},
		{FloatDistribution{Low: 0.1, High: 1, Step: 0.2}, 0.9, true},
		{FloatDistribution{Low: 0, High: 1, Step: 0.1}, 1, false},
		{FloatDistribution{Low: -1.5, High: 2, Step: 0.25}, 2, false},
		{FloatDistribution{Low: 1e-3, High: 1, Step: 7e-3}, 0.995, true},
	} {
		d := c.d
		if changed := d.AdjustHigh(); changed != c.changed || d.High != c.want {
			t.Errorf("%v: high %v (changed %v), want %v (%v)", c.d, d.High, changed, c.want, c.changed)
		}
	}
	wide := IntDistribution{Low: math.MinInt64 + 1, High: math.MaxInt64, Step: 3}
	if !wide.AdjustHigh() || (uint64(wide.High)-uint64(wide.Low))%3 != 0 || wide.High < math.MaxInt64-2 {
		t.Errorf("wide int range adjusted to high %d", wide.High)
	}
	if d := (IntDistribution{Low: 0, High: 10, Step: 3}); !d.AdjustHigh() || d.High != 9 {
		t.Errorf("int[0, 10] step 3: high %d, want 9", d.High)
	}
}
