package profileview

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/perf"
	"github.com/gomase/gomase/mase/timeline"
	"github.com/gomase/gomase/mase/train"
)

func wellFormed(t *testing.T, what, doc string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	for {
		_, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return
			}
			t.Fatalf("%s is not well-formed XML: %v\n%.400s", what, err, doc)
		}
	}
}

func TestTimelineSVGNestsAndLabels(t *testing.T) {
	us := time.Microsecond
	evs := []timeline.Event{
		{Track: "run", Cat: "run", Name: "Run", Start: 0, Dur: 100 * us},
		{Track: "run", Cat: "execute", Name: "linear <1>", Start: 10 * us, Dur: 30 * us, Args: map[string]any{"shapes": "(Float32)[8 128]"}},
		{Track: "run", Cat: "host", Name: "sdpa", Start: 50 * us, Dur: 40 * us},
	}
	svg := TimelineSVG(evs, 0, 800)
	wellFormed(t, "the timeline", svg)
	if n := strings.Count(svg, "<rect"); n != 3 {
		t.Errorf("%d bars, want 3", n)
	}
	for _, want := range []string{"linear &lt;1&gt; (execute) 30.0 µs", "shapes: (Float32)[8 128]", `fill="#ff7f0e"`, ">run</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
	// The two children sit one row below the Run.
	if !strings.Contains(svg, `y="22" width`) || !strings.Contains(svg, `y="38" width`) {
		t.Errorf("rows: %s", svg)
	}
	if got := TimelineSVG(evs, time.Second, 800); !strings.Contains(got, "no spans recorded") {
		t.Errorf("spans after the last: %s", got)
	}
}

func TestRooflineAndTables(t *testing.T) {
	p := &perf.RunProfile{Mode: "eager", Workload: "toy", Runs: 2, WallS: 0.001, Stages: []perf.StageProfile{
		{Name: "mm", Op: "call_module Linear", Calls: 2, MeanS: 1e-4, Flops: 2e6, Bytes: 1e5, GFlopsPerS: 20},
		{Name: "add<x>", Op: "call_function add", Calls: 2, MeanS: 1e-5, ElementwiseFlops: 1e3, Bytes: 12e3, GFlopsPerS: 0.1},
	}, Compiles: []perf.CompileRecord{{Stage: "mm", Shapes: "(Float32)[8 16]", Seconds: 0.02}}}
	svg, err := RooflineSVG(&perf.Peaks{MatmulGFlops: 100, CopyGBs: 10, Ridge: 10}, p)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, "the roofline", string(svg))
	table := StagesHTML(p, 1)
	wellFormed(t, "the stages", table)
	if !strings.Contains(table, "add<x>") && !strings.Contains(table, "… 1 more") {
		t.Errorf("stages table: %s", table)
	}
	compiles := CompilesHTML(p)
	wellFormed(t, "the compiles", compiles)
	if !strings.Contains(compiles, "1 executable compiled, 0.02 s") {
		t.Errorf("compiles table: %s", compiles)
	}
}

// TestTrainingCompilesHTML: one row per compile with its shapes escaped,
// the counts and hits in each caption.
func TestTrainingCompilesHTML(t *testing.T) {
	doc := TrainingCompilesHTML(train.Compiles{Count: 2, Seconds: 1.5, Hits: 98}, train.Compiles{Count: 1, Seconds: 0.25, Hits: 7},
		[]train.CompileEvent{{Shapes: "(Int32)[8, 128]", Seconds: 1}, {Shapes: "(Int32)[8, 64] <&>", Seconds: 0.5}},
		[]train.CompileEvent{{Shapes: "(Int32)[32, 128]", Seconds: 0.25}})
	wellFormed(t, "the compile report", "<div>"+doc+"</div>")
	for _, want := range []string{"training: 2 executables compiled, 1.50 s; 98 calls", "evaluation: 1 executable compiled, 0.25 s; 7 calls",
		"(Int32)[8, 64] &lt;&amp;&gt;", "(Int32)[32, 128]"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report lacks %q:\n%s", want, doc)
		}
	}
	if rows := strings.Count(doc, "<tr><td>"); rows != 3 {
		t.Errorf("%d rows, want one per compile (3)", rows)
	}
}

// TestHLOHTML: one collapsed section per module, its text escaped, a cut
// module said to be cut.
func TestHLOHTML(t *testing.T) {
	doc := HLOHTML([]perf.HLOModule{
		{Name: "jit_fwd", Bytes: 40, Text: "ROOT %fusion = f32[8]{0} fusion(%p0) <x>"},
		{Name: "jit_big", Bytes: 5000000, Text: "HloModule jit_big", Truncated: true},
	})
	wellFormed(t, "the HLO view", doc)
	for _, want := range []string{"2 modules", "<summary>jit_fwd (40 bytes)</summary>", "fusion(%p0) &lt;x&gt;", "first 17 bytes shown"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the view lacks %q:\n%s", want, doc)
		}
	}
}
