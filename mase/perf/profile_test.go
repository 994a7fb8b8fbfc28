package perf

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/timeline"
	"github.com/gomase/gomase/mase/trace"
)

// TestProfileBertTiny profiles bert-tiny in both modes with a cost of one
// FLOP and one byte a node: every node's cost lands in exactly one stage,
// each stage ran once a timed run, the compiles are the executables, and
// the trace is JSON.
func TestProfileBertTiny(t *testing.T) {
	m, err := models.NewBertTiny(1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, []string{"input_ids"})
	if err != nil {
		t.Fatal(err)
	}
	mg := &ir.MaseGraph{Model: m, Graph: g}
	in := bertTinyIDs(2, 16)
	for _, x := range in {
		defer x.FinalizeAll()
	}
	unit := func(*ir.Node) NodeCost { return NodeCost{Flops: 1, Bytes: 1} }
	nodes := int64(len(g.Nodes()))
	for _, mode := range []string{Eager, Compiled} {
		var r RecordingRunner
		if mode == Eager {
			r, err = execute.NewEager(mg, execute.Mode{})
		} else {
			r, err = execute.Compile(mg, execute.Mode{})
		}
		if err != nil {
			t.Fatal(err)
		}
		p, err := Profile("bert-tiny b2×16", mode, r, g, in, 3, unit)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if p.Flops != nodes || p.Bytes != nodes {
			t.Errorf("%s: %d FLOPs, %d bytes, want %d each", mode, p.Flops, p.Bytes, nodes)
		}
		var calls int
		var staged int64
		for _, s := range p.Stages {
			if s.Calls != 3 && mode == Compiled {
				t.Errorf("%s: stage %s ran %d times in 3 runs", mode, s.Name, s.Calls)
			}
			calls += s.Calls
			staged += s.Flops
		}
		if want := calls + firstRunHits(p); p.CacheHits != want {
			t.Errorf("%s: %d cache hits, want the %d executable calls that compiled nothing", mode, p.CacheHits, want)
		}
		if len(p.Compiles) != p.Executables || p.Executables == 0 {
			t.Errorf("%s: %d compiles recorded, %d executables", mode, len(p.Compiles), p.Executables)
		}
		if mode == Compiled && (len(p.Stages) != 1 || staged != nodes) {
			t.Errorf("compiled: stages %+v: want the whole graph as one", p.Stages)
		}
		if mode == Eager && (staged > nodes || len(p.Stages) < 20) {
			t.Errorf("eager: %d stages hold %d node costs of %d", len(p.Stages), staged, nodes)
		}
		if p.LeafCoverage <= 0 || p.LeafCoverage > 1 {
			t.Errorf("%s: leaf coverage %v", mode, p.LeafCoverage)
		}
		var text, trace bytes.Buffer
		p.Format(&text, 5)
		if !strings.Contains(text.String(), mode+" mode: 3 timed runs") {
			t.Errorf("%s: text:\n%s", mode, text.String())
		}
		if err := p.Recorder().WriteChromeTrace(&trace, "gomase"); err != nil || !json.Valid(trace.Bytes()) {
			t.Errorf("%s: trace: %v", mode, err)
		}
	}
}

func TestProfileFindings(t *testing.T) {
	eager := &RunProfile{Runs: 2, WallS: 0.010, Flops: 2e7, LeafCoverage: 0.9, Stages: []StageProfile{
		{Name: "fc", Op: "call_module Linear", Calls: 20, Share: 0.5},
		{Name: "act", Op: "call_module GELU", Calls: 20, Share: 0.2},
	}}
	compiled := &RunProfile{Runs: 2, WallS: 0.004, Flops: 2e7, LeafCoverage: 1}
	md := ProfileFindings(eager, compiled, 100*time.Microsecond)
	for _, want := range []string{"20 executable calls a run", "The 2 largest nodes take 70%", "about 2.000 ms, 20% of the run", "2.50× eager", "6.000 ms a run less. Dispatching the per-node calls accounts for about 2.000 ms of that (33%); the rest, 4.000 ms"} {
		if !strings.Contains(md, want) {
			t.Errorf("findings lack %q:\n%s", want, md)
		}
	}
}

// bertTinyIDs is a batch of token ids for bert-tiny.
func bertTinyIDs(batch, seq int) map[string]*tensors.Tensor {
	ids := make([]int32, batch*seq)
	for i := range ids {
		ids[i] = int32(1000 + i%29000)
	}
	return map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, batch, seq)}
}

// firstRunHits counts the first run's executable calls that compiled
// nothing (stages sharing an executable built earlier in that run).
func firstRunHits(p *RunProfile) int {
	n := 0
	for _, e := range p.Recorder().Events() {
		if e.Start < p.TimedFrom() && e.Cat == execute.CatExecute {
			n++
		}
	}
	return n
}

// transferRunner records, in each run, an input copy of 2 ms and an
// executable call of 3 ms, as a runner on a GPU backend does.
type transferRunner struct{ rec *timeline.Recorder }

func (r *transferRunner) Run(map[string]*tensors.Tensor) ([]*tensors.Tensor, error) {
	start := r.rec.Now()
	r.rec.Add(timeline.Event{Track: execute.TrackRun, Cat: execute.CatTransfer, Name: "upload (Int32)[8, 128]", Start: start, Dur: 2 * time.Millisecond})
	r.rec.Add(timeline.Event{Track: execute.TrackRun, Cat: execute.CatExecute, Name: "compiled graph", Start: start + 2*time.Millisecond, Dur: 3 * time.Millisecond})
	time.Sleep(5 * time.Millisecond)
	return nil, nil
}
func (r *transferRunner) InputNames() []string               { return nil }
func (r *transferRunner) Close()                             {}
func (r *transferRunner) SetRecorder(rec *timeline.Recorder) { r.rec = rec }
func (r *transferRunner) Executables() int                   { return 1 }

// TestProfileCountsTransfers: input copies are time a run spends, apart
// from the executable calls' rows.
func TestProfileCountsTransfers(t *testing.T) {
	r := &transferRunner{}
	p, err := Profile("fake", Compiled, r, ir.New(), nil, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.TransferS-0.002) > 1e-9 {
		t.Errorf("transfer %.6f s a run, want 0.002", p.TransferS)
	}
	if len(p.Stages) != 1 || p.Stages[0].Name != "compiled graph" || p.Stages[0].Calls != 4 {
		t.Errorf("stages %+v: want only the executable call, 4 times", p.Stages)
	}
}

// TestProfileModeOnItsOwnBackend: ProfileMode on a backend other than the
// default (as `mase profile --backend` opens one) counts the costs on that
// backend too, so the inputs never belong to two backends (GoMLX refuses a
// tensor across backend instances; the first GPU run failed so).
func TestProfileModeOnItsOwnBackend(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Finalize()
	m, err := models.NewBertTiny(1)
	if err != nil {
		t.Fatal(err)
	}
	in := bertTinyIDs(2, 16)
	for _, x := range in {
		defer x.FinalizeAll()
	}
	for _, mode := range []string{Compiled, Eager} {
		p, _, _, err := ProfileMode(be, "bert-tiny b2×16", mode, m, []string{"input_ids"}, in, 1, nil)
		if err != nil {
			t.Fatalf("%s on a second Go backend: %v", mode, err)
		}
		if p.Flops == 0 {
			t.Errorf("%s: no FLOPs counted", mode)
		}
	}
}
