// Package timeline records what a run did and when, as spans on named
// tracks (the host's run loop, compiles, host kernels), and writes them as
// Chrome trace JSON (the format Perfetto and chrome://tracing open).
//
// A Recorder is safe for concurrent use. A nil *Recorder records nothing,
// so code can call it unconditionally: the cost of not profiling is one
// nil check.
package timeline

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"
)

// Event is one span: Start and Dur from the recorder's origin.
type Event struct {
	Track string         `json:"track"`
	Name  string         `json:"name"`
	Cat   string         `json:"cat"` // what kind of work: run, execute, compile, host, ...
	Start time.Duration  `json:"start_ns"`
	Dur   time.Duration  `json:"dur_ns"`
	Args  map[string]any `json:"args,omitempty"`
}

// End is the end of the span.
func (e Event) End() time.Duration { return e.Start + e.Dur }

// Recorder collects events.
type Recorder struct {
	origin time.Time
	mu     sync.Mutex
	events []Event
	tracks []string // in order of first use
}

// New returns a recorder whose origin is now.
func New() *Recorder { return &Recorder{origin: time.Now()} }

// Now is the time since the recorder's origin (0 on a nil recorder): the
// Start of an Event added later with Add.
func (r *Recorder) Now() time.Duration {
	if r == nil {
		return 0
	}
	return time.Since(r.origin)
}

// Begin starts a span and returns the function that ends it (with args
// merged into the event's). On a nil recorder both do nothing.
func (r *Recorder) Begin(track, cat, name string, args map[string]any) func(more map[string]any) {
	if r == nil {
		return func(map[string]any) {}
	}
	start := time.Since(r.origin)
	return func(more map[string]any) {
		end := time.Since(r.origin)
		if len(more) > 0 {
			if args == nil {
				args = map[string]any{}
			}
			for k, v := range more {
				args[k] = v
			}
		}
		r.Add(Event{Track: track, Cat: cat, Name: name, Start: start, Dur: end - start, Args: args})
	}
}

// Add records a finished event.
func (r *Recorder) Add(e Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.tracks, e.Track) {
		r.tracks = append(r.tracks, e.Track)
	}
	r.events = append(r.events, e)
}

// Events returns the events so far, by start time (the longer first on a
// tie, so a parent precedes its children).
func (r *Recorder) Events() []Event {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	evs := append([]Event(nil), r.events...)
	r.mu.Unlock()
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].Start != evs[j].Start {
			return evs[i].Start < evs[j].Start
		}
		return evs[i].Dur > evs[j].Dur
	})
	return evs
}

// Tracks returns the track names in order of first use.
func (r *Recorder) Tracks() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.tracks...)
}

// chromeEvent is one entry of a Chrome trace's traceEvents: a complete
// event (ph "X", ts and dur in microseconds) or a metadata event naming a
// thread (ph "M").
type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteChromeTrace writes the events as Chrome trace JSON: one thread
// (tid) per track, named by a metadata event, every span a complete
// event. process names the process row.
func (r *Recorder) WriteChromeTrace(w io.Writer, process string) error {
	tracks := r.Tracks()
	tid := map[string]int{}
	out := []chromeEvent{{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": process}}}
	for i, t := range tracks {
		tid[t] = i + 1
		out = append(out,
			chromeEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: i + 1, Args: map[string]any{"name": t}},
			chromeEvent{Name: "thread_sort_index", Ph: "M", Pid: 1, Tid: i + 1, Args: map[string]any{"sort_index": i}})
	}
	for _, e := range r.Events() {
		dur := micros(e.Dur)
		out = append(out, chromeEvent{Name: e.Name, Cat: e.Cat, Ph: "X", Ts: micros(e.Start), Dur: &dur, Pid: 1, Tid: tid[e.Track], Args: e.Args})
	}
	doc := struct {
		TraceEvents     []chromeEvent `json:"traceEvents"` // first: a reader can tell a trace by its start
		DisplayTimeUnit string        `json:"displayTimeUnit"`
	}{out, "ms"}
	if err := json.NewEncoder(w).Encode(doc); err != nil {
		return fmt.Errorf("timeline: writing the trace: %w", err)
	}
	return nil
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// LeafCoverage is the share of the traced span (the first event's start
// to the last event's end) that leaf events cover on track: events that
// hold no other event of the track. Time outside every leaf is time the
// trace does not explain. It is 0 for a track without events.
func LeafCoverage(events []Event, track string) float64 {
	var evs []Event
	for _, e := range events {
		if e.Track == track {
			evs = append(evs, e)
		}
	}
	if len(evs) == 0 {
		return 0
	}
	first, last := evs[0].Start, evs[0].End()
	for _, e := range evs {
		first, last = min(first, e.Start), max(last, e.End())
	}
	var leaves [][2]time.Duration
	for i, e := range evs {
		leaf := true
		for j, o := range evs {
			if i != j && o.Dur > 0 && o.Start >= e.Start && o.End() <= e.End() && (o.Dur < e.Dur || j > i) {
				leaf = false
				break
			}
		}
		if leaf {
			leaves = append(leaves, [2]time.Duration{e.Start, e.End()})
		}
	}
	sort.Slice(leaves, func(i, j int) bool { return leaves[i][0] < leaves[j][0] })
	var covered, reach time.Duration
	reach = first
	for _, l := range leaves {
		s := max(l[0], reach)
		if l[1] > s {
			covered += l[1] - s
			reach = l[1]
		}
	}
	if last == first {
		return 1
	}
	return float64(covered) / float64(last-first)
}
