package search_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/studydata"
)

func TestOptimizeBasics(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{Name: "basic", Sampler: search.NewRandomSampler(1)})
	if s.Name() != "basic" || s.Direction() != studydata.Minimize {
		t.Fatalf("name %q direction %v", s.Name(), s.Direction())
	}
	obj := func(tr *search.Trial) (float64, error) {
		x, err := tr.SuggestFloat("x", -3, 3)
		if err != nil {
			return 0, err
		}
		n, err := tr.SuggestInt("n", 2, 10, search.WithStep(2))
		if err != nil {
			return 0, err
		}
		lr, err := tr.SuggestFloat("lr", 1e-5, 1e-1, search.WithLog())
		if err != nil {
			return 0, err
		}
		q, err := tr.SuggestFloat("q", 0, 1, search.WithStep(0.25))
		if err != nil {
			return 0, err
		}
		k, err := tr.SuggestInt("k", 1, 1000, search.WithLog())
		if err != nil {
			return 0, err
		}
		act, err := tr.SuggestCategorical("act", []any{"relu", "gelu", 3})
		if err != nil {
			return 0, err
		}
		if n%2 != 0 || n < 2 || n > 10 || lr < 1e-5 || lr > 1e-1 || k < 1 || k > 1000 {
			return 0, fmt.Errorf("out of range: n=%d lr=%v k=%d", n, lr, k)
		}
		if math.Abs(q*4-math.Round(q*4)) > 1e-12 {
			return 0, fmt.Errorf("q=%v not on the step grid", q)
		}
		if err := tr.SetUserAttr("act", act); err != nil {
			return 0, err
		}
		if tr.Context() == nil {
			return 0, errors.New("no context")
		}
		return x * x, nil
	}
	if err := s.Optimize(context.Background(), obj, 30, 0); err != nil {
		t.Fatal(err)
	}
	ts, err := s.Trials()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 30 {
		t.Fatalf("%d trials, want 30", len(ts))
	}
	best := math.Inf(1)
	for i, tr := range ts {
		if tr.Number != i || tr.State != studydata.Complete {
			t.Fatalf("trial %d: number %d state %v (%s)", i, tr.Number, tr.State, tr.Message)
		}
		if _, ok := tr.Params["x"].(float64); !ok {
			t.Errorf("x is %T, want float64", tr.Params["x"])
		}
		if _, ok := tr.Params["n"].(int); !ok {
			t.Errorf("n is %T, want int", tr.Params["n"])
		}
		if tr.UserAttrs["act"] != tr.Params["act"] {
			t.Errorf("user attr %v != param %v", tr.UserAttrs["act"], tr.Params["act"])
		}
		if tr.Finished.Before(tr.Started) {
			t.Errorf("trial %d finished before it started", i)
		}
		best = math.Min(best, tr.Value)
	}
	bt, err := s.BestTrial()
	if err != nil || bt.Value != best {
		t.Fatalf("BestTrial = %v, %v; want value %v", bt.Value, err, best)
	}
	// A second Optimize adds new trials; numbers continue.
	if err := s.Optimize(context.Background(), obj, 5, 0); err != nil {
		t.Fatal(err)
	}
	if ts, _ := s.Trials(); len(ts) != 35 || ts[34].Number != 34 {
		t.Fatalf("after a second Optimize: %d trials", len(ts))
	}
}

func TestMaximizeBestTrial(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{Direction: studydata.Maximize, Sampler: search.NewRandomSampler(2)})
	if _, err := s.BestTrial(); !errors.Is(err, search.ErrNoCompleteTrial) {
		t.Fatalf("BestTrial on an empty study: %v, want ErrNoCompleteTrial", err)
	}
	vals := []float64{0.5, 0.9, 0.9, 0.1}
	i := 0
	err := s.Optimize(context.Background(), func(*search.Trial) (float64, error) { v := vals[i]; i++; return v, nil }, len(vals), 0)
	if err != nil {
		t.Fatal(err)
	}
	bt, err := s.BestTrial()
	if err != nil || bt.Number != 1 || bt.Value != 0.9 {
		t.Fatalf("best = #%d %v (%v), want #1 0.9 (first of equals)", bt.Number, bt.Value, err)
	}
}

func TestTrialStates(t *testing.T) {
	var logBuf bytes.Buffer
	s := searchtest.NewStudy(t, search.Config{Sampler: search.NewRandomSampler(3), Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	obj := func(tr *search.Trial) (float64, error) {
		x, err := tr.SuggestFloat("x", 0, 1)
		if err != nil {
			return 0, err
		}
		switch tr.Number() {
		case 0:
			return x, nil
		case 1:
			return 0, fmt.Errorf("%w: accuracy 0.3 at epoch 1", search.ErrPruned)
		case 2:
			return 0, errors.New("out of memory")
		case 3:
			panic("boom")
		case 4:
			return math.NaN(), nil
		case 5:
			return math.Inf(-1), nil
		}
		return x + 1, nil
	}
	if err := s.Optimize(context.Background(), obj, 7, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ := s.Trials()
	want := []struct {
		state studydata.TrialState
		msg   string
	}{
		{studydata.Complete, ""}, {studydata.Pruned, "accuracy 0.3"}, {studydata.Fail, "out of memory"}, {studydata.Fail, "objective panicked: boom"},
		{studydata.Fail, "NaN"}, {studydata.Fail, "-Inf"}, {studydata.Complete, ""},
	}
	for i, w := range want {
		if ts[i].State != w.state || !strings.Contains(ts[i].Message, w.msg) {
			t.Errorf("trial %d: %v %q, want %v containing %q", i, ts[i].State, ts[i].Message, w.state, w.msg)
		}
		if ts[i].State != studydata.Complete && !math.IsNaN(ts[i].Value) {
			t.Errorf("trial %d: value %v, want NaN for a %v trial", i, ts[i].Value, ts[i].State)
		}
	}
	if !strings.Contains(logBuf.String(), "stack=") {
		t.Errorf("the panic's stack was not logged")
	}
	if bt, _ := s.BestTrial(); bt.Number != 0 {
		t.Errorf("best trial %d, want 0", bt.Number)
	}
}

func TestSuggestSameNameTwice(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{Sampler: search.NewRandomSampler(4)})
	tr, err := s.Ask(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := tr.SuggestFloat("x", 0, 1)
	b, err := tr.SuggestFloat("x", 0, 1)
	if err != nil || a != b {
		t.Fatalf("same suggestion twice: %v then %v (%v)", a, b, err)
	}
	if _, err := tr.SuggestFloat("x", 0, 2); err == nil || !strings.Contains(err.Error(), "already suggested") {
		t.Fatalf("a different range: %v, want an 'already suggested' error", err)
	}
	if _, err := tr.SuggestInt("x", 0, 1); err == nil {
		t.Fatal("a different kind: no error")
	}
	c1, _ := tr.SuggestCategorical("c", []any{2, 4, 8})
	c2, err := tr.SuggestCategorical("c", []any{2.0, 4.0, 8.0}) // equal by value
	if err != nil || !studydata.ChoiceEqual(c1, c2) {
		t.Fatalf("categorical equal by value: %v %v %v", c1, c2, err)
	}
	if _, ok := c2.(float64); !ok {
		t.Errorf("the choice comes from the caller's slice: got %T, want float64", c2)
	}
	if _, err := tr.SuggestCategorical("c", []any{2, 4}); err == nil {
		t.Fatal("different choices: no error")
	}
	ft, err := s.Tell(tr, a, nil)
	if err != nil || ft.State != studydata.Complete || len(ft.Params) != 2 {
		t.Fatalf("Tell: %+v %v", ft, err)
	}
	if _, err := tr.SuggestFloat("y", 0, 1); err == nil {
		t.Fatal("suggest after Tell: no error")
	}
	if _, err := s.Tell(tr, 1, nil); err == nil {
		t.Fatal("second Tell: no error")
	}
}

func TestSuggestValidation(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{Sampler: search.NewRandomSampler(5)})
	tr, _ := s.Ask(context.Background())
	for _, c := range []struct {
		name string
		f    func() error
		want string
	}{
		{"float empty", func() error { _, err := tr.SuggestFloat("a", 2, 1); return err }, "low must be ≤ high"},
		{"float log ≤ 0", func() error { _, err := tr.SuggestFloat("b", 0, 1, search.WithLog()); return err }, "low > 0"},
		{"float step+log", func() error { _, err := tr.SuggestFloat("c", 1, 2, search.WithLog(), search.WithStep(0.5)); return err }, "cannot be combined"},
		{"float NaN", func() error { _, err := tr.SuggestFloat("d", math.NaN(), 1); return err }, "finite"},
		// Optuna refuses step=0 (it used to be taken as no step).
		{"float step 0", func() error { _, err := tr.SuggestFloat("d0", 0, 1, search.WithStep(0)); return err }, "step 0 is invalid"},
		{"float step -1", func() error { _, err := tr.SuggestFloat("d1", 0, 1, search.WithStep(-1)); return err }, "step -1 is invalid"},
		{"int step 0.5", func() error { _, err := tr.SuggestInt("e", 0, 4, search.WithStep(0.5)); return err }, "whole number"},
		{"int log 0", func() error { _, err := tr.SuggestInt("f", 0, 4, search.WithLog()); return err }, "low ≥ 1"},
		{"int empty", func() error { _, err := tr.SuggestInt("g", 5, 4); return err }, "low must be ≤ high"},
		{"no choices", func() error { _, err := tr.SuggestCategorical("h", nil); return err }, "no choices"},
		{"empty name", func() error { _, err := tr.SuggestFloat("", 0, 1); return err }, "empty parameter name"},
	} {
		err := c.f()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// Single-valued distributions return their value without sampling;
	// a range not on the step grid is cut down onto it.
	if v, err := tr.SuggestInt("one", 3, 3); err != nil || v != 3 {
		t.Errorf("SuggestInt(3, 3) = %v, %v", v, err)
	}
	for range 20 {
		tr2, _ := s.Ask(context.Background())
		v, err := tr2.SuggestInt("stepped", 0, 9, search.WithStep(4))
		if err != nil || v%4 != 0 || v > 8 {
			t.Fatalf("SuggestInt(0, 9, step 4) = %v, %v", v, err)
		}
		f, err := tr2.SuggestFloat("fstepped", 0, 1, search.WithStep(0.3))
		if err != nil || f > 0.9+1e-9 {
			t.Fatalf("SuggestFloat(0, 1, step 0.3) = %v, %v", f, err)
		}
		s.Tell(tr2, 0, nil)
	}
}

func TestCategoricalTyped(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{Sampler: search.NewRandomSampler(6)})
	type act string
	seen := map[act]bool{}
	err := s.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		a, err := search.Categorical(tr, "act", []act{"relu", "gelu"})
		seen[a] = true
		h, err2 := search.Categorical(tr, "hidden", []int{128, 256})
		return float64(h), errors.Join(err, err2)
	}, 20, 0)
	if err != nil || !seen["relu"] || !seen["gelu"] {
		t.Fatalf("seen %v, err %v", seen, err)
	}
}

func TestOptimizeContextAndTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := searchtest.NewStudy(t, search.Config{Sampler: search.NewRandomSampler(7)})
	err := s.Optimize(ctx, func(tr *search.Trial) (float64, error) {
		if tr.Number() == 2 {
			cancel()
		}
		if tr.Context().Err() != nil {
			return 0, tr.Context().Err()
		}
		return 1, nil
	}, 100, 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Optimize after cancel: %v, want context.Canceled", err)
	}
	ts, _ := s.Trials()
	if len(ts) != 3 || ts[2].State != studydata.Fail || !strings.Contains(ts[2].Message, "canceled") {
		t.Fatalf("after cancel: %d trials, last %v %q", len(ts), ts[len(ts)-1].State, ts[len(ts)-1].Message)
	}

	s = searchtest.NewStudy(t, search.Config{Sampler: search.NewRandomSampler(8)})
	start := time.Now()
	err = s.Optimize(context.Background(), func(*search.Trial) (float64, error) { time.Sleep(10 * time.Millisecond); return 1, nil }, 1000, 45*time.Millisecond)
	if err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("timeout: %v after %v", err, time.Since(start))
	}
	if ts, _ := s.Trials(); len(ts) < 2 || len(ts) > 20 {
		t.Fatalf("timeout 45ms with 10ms trials ran %d trials", len(ts))
	}

	if err := s.Optimize(context.Background(), func(*search.Trial) (float64, error) { return 1, nil }, 0, 0); err == nil {
		t.Fatal("Optimize with no limit at all: no error")
	}
	// Stop from inside the objective.
	n := 0
	err = s.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		n++
		if n == 3 {
			tr.Study().Stop()
		}
		return 1, nil
	}, 0, time.Hour)
	if err != nil || n != 3 {
		t.Fatalf("Stop: %d trials, %v", n, err)
	}
}

func TestOptimizeUntil(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{Sampler: search.NewRandomSampler(9)})
	obj := func(tr *search.Trial) (float64, error) {
		if tr.Number()%3 == 1 {
			return 0, errors.New("flaky")
		}
		return 1, nil
	}
	if err := s.OptimizeUntil(context.Background(), obj, 6, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ := s.Trials()
	if studydata.CountStates(ts, studydata.Complete) != 6 || studydata.CountStates(ts, studydata.Fail) != 3 {
		t.Fatalf("complete %d fail %d, want 6 and 3", studydata.CountStates(ts, studydata.Complete), studydata.CountStates(ts, studydata.Fail))
	}
	// Already there: nothing to do.
	if err := s.OptimizeUntil(context.Background(), obj, 6, 0); err != nil {
		t.Fatal(err)
	}
	if ts2, _ := s.Trials(); len(ts2) != len(ts) {
		t.Fatalf("OptimizeUntil at its total ran %d more trials", len(ts2)-len(ts))
	}
	err := s.OptimizeUntil(context.Background(), func(*search.Trial) (float64, error) { return 0, errors.New("always") }, 100, 0)
	if err == nil || !strings.Contains(err.Error(), "10 trials in a row failed") {
		t.Fatalf("always failing: %v", err)
	}
}

func TestConcurrentOptimize(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := s.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
				return tr.SuggestFloat("x", -1, 1)
			}, 15, 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ts, _ := s.Trials()
	if len(ts) != 60 || studydata.CountStates(ts, studydata.Complete) != 60 {
		t.Fatalf("%d trials, %d complete; want 60", len(ts), studydata.CountStates(ts, studydata.Complete))
	}
}

func TestStudyRefusesUnknownDirection(t *testing.T) {
	if _, err := search.NewStudy(search.Config{Direction: 7}); err == nil {
		t.Error("NewStudy with direction 7: no error")
	}
}

func TestCallbacksSeeEveryFinishedTrial(t *testing.T) {
	var seen []string
	cb := func(s *search.Study, ft studydata.FrozenTrial) {
		seen = append(seen, fmt.Sprintf("%s:%d:%v", s.Name(), ft.Number, ft.State))
	}
	s, err := search.NewStudy(search.Config{Name: "cb", Sampler: search.NewRandomSampler(1), Callbacks: []func(*search.Study, studydata.FrozenTrial){cb}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		x, err := tr.SuggestFloat("x", 0, 1)
		if tr.Number() == 1 {
			return 0, errors.New("boom")
		}
		return x, err
	}, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, " "); got != "cb:0:complete cb:1:fail cb:2:complete" {
		t.Errorf("callbacks saw %q", got)
	}
}
