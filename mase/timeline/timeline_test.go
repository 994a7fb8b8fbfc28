package timeline

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.Begin("run", "execute", "x", nil)(map[string]any{"a": 1})
	r.Add(Event{Name: "y"})
	if r.Events() != nil || r.Tracks() != nil {
		t.Fatal("a nil recorder recorded events")
	}
}

func TestBeginNestsAndMergesArgs(t *testing.T) {
	r := New()
	endRun := r.Begin("run", "run", "Run", map[string]any{"mode": "eager"})
	end := r.Begin("run", "execute", "linear", nil)
	time.Sleep(time.Millisecond)
	end(map[string]any{"calls": 1})
	endRun(nil)
	evs := r.Events()
	if len(evs) != 2 || evs[0].Name != "Run" || evs[1].Name != "linear" {
		t.Fatalf("events %+v: want Run, then linear inside it", evs)
	}
	if evs[1].Start < evs[0].Start || evs[1].End() > evs[0].End() || evs[1].Dur < time.Millisecond {
		t.Errorf("linear %v+%v is not inside Run %v+%v", evs[1].Start, evs[1].Dur, evs[0].Start, evs[0].Dur)
	}
	if evs[1].Args["calls"] != 1 || evs[0].Args["mode"] != "eager" {
		t.Errorf("args: %v, %v", evs[0].Args, evs[1].Args)
	}
}

func TestChromeTraceIsCompleteEventsPerTrack(t *testing.T) {
	r := New()
	r.Add(Event{Track: "run", Cat: "run", Name: "Run", Start: 0, Dur: 10 * time.Microsecond})
	r.Add(Event{Track: "run", Cat: "execute", Name: "add", Start: 2 * time.Microsecond, Dur: 3 * time.Microsecond})
	r.Add(Event{Track: "compile", Cat: "compile", Name: "add", Start: 1 * time.Microsecond, Dur: 1 * time.Microsecond, Args: map[string]any{"shapes": "(f32)[8 128]"}})
	var buf bytes.Buffer
	if err := r.WriteChromeTrace(&buf, "gomase"); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Ts   float64        `json:"ts"`
			Dur  *float64       `json:"dur"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	threads := map[int]string{}
	var complete int
	for _, e := range trace.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" {
				threads[e.Tid] = e.Args["name"].(string)
			}
		case "X":
			complete++
			if e.Dur == nil {
				t.Errorf("%s: a complete event without dur", e.Name)
			}
			if threads[e.Tid] == "" {
				t.Errorf("%s: on an unnamed thread %d", e.Name, e.Tid)
			}
		default:
			t.Errorf("unexpected phase %q", e.Ph)
		}
	}
	if complete != 3 || len(threads) != 2 || threads[1] != "run" || threads[2] != "compile" {
		t.Errorf("%d complete events, threads %v", complete, threads)
	}
}

func TestLeafCoverage(t *testing.T) {
	us := time.Microsecond
	evs := []Event{
		{Track: "run", Name: "Run", Start: 0, Dur: 100 * us},
		{Track: "run", Name: "a", Start: 0, Dur: 40 * us},
		{Track: "run", Name: "b", Start: 50 * us, Dur: 40 * us},
		{Track: "run", Name: "b.inner", Start: 60 * us, Dur: 10 * us}, // b is then no leaf
		{Track: "run", Name: "zero", Start: 95 * us, Dur: 0},
		{Track: "other", Name: "x", Start: 0, Dur: 500 * us},
	}
	// Leaves on run: a (40), b.inner (10), zero (0): 50 of 100.
	if got := LeafCoverage(evs, "run"); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("coverage %v, want 0.5", got)
	}
	if got := LeafCoverage(evs, "other"); got != 1 {
		t.Errorf("a single event covers its own span: %v", got)
	}
	if got := LeafCoverage(evs, "none"); got != 0 {
		t.Errorf("no events: %v", got)
	}
}
