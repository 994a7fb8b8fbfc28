package widget_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/graphviz"
	"github.com/gomase/gomase/kernel/report"
	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/widget"
	"github.com/gomase/gomase/rtl/vcd"
)

const sampleVCD = `$timescale 1ns $end
$scope module top $end
$var wire 1 ! clk $end
$var wire 8 " data [7:0] $end
$var wire 1 # valid $end
$upscope $end
$enddefinitions $end
#0
0!
b00000000 "
0#
#5
1!
#10
0!
b00010010 "
1#
#15
1!
#20
0!
b11111111 "
0#
#25
1!
#30
0!
`

// allWidgets builds one of every widget, as a notebook would.
func allWidgets(t *testing.T) []widget.Widget {
	t.Helper()
	g := graphviz.NewDigraph("g")
	for _, n := range []string{"x", "fc1", "relu", "output"} {
		if err := g.AddNode(n, map[string]string{"style": "filled", "fillcolor": "#bbdefb"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range [][2]string{{"x", "fc1"}, {"fc1", "relu"}, {"relu", "output"}} {
		if err := g.AddEdge(e[0], e[1], nil); err != nil {
			t.Fatal(err)
		}
	}
	svg, err := graphviz.RenderSVG(g.String())
	if err != nil {
		t.Fatal(err)
	}
	line, err := widget.LineChart(plot.Chart{Title: "Accuracy", XLabel: "epoch", YLabel: "accuracy",
		Series: []plot.Series{{Name: "train", X: []float64{1, 2, 3}, Y: []float64{0.5, 0.7, 0.8}},
			{Name: "trials", X: []float64{1, 2, 3}, Y: []float64{0.4, 0.6, 0.75}, Scatter: true}}})
	if err != nil {
		t.Fatal(err)
	}
	bars, err := widget.BarChart(plot.BarChart{Title: "Bits", Categories: []string{"fc1", "fc2"},
		Groups: []plot.BarGroup{{Name: "weights", Values: []float64{8, 4}}}})
	if err != nil {
		t.Fatal(err)
	}
	tb := widget.NewTable("Runs", "name", "accuracy")
	for _, r := range []struct {
		name string
		acc  float64
	}{{"b", 0.9}, {"c", 10}, {"a", 2}} {
		if err := tb.AddRow(r.name, r.acc); err != nil {
			t.Fatal(err)
		}
	}
	dump, err := vcd.Parse(strings.NewReader(sampleVCD))
	if err != nil {
		t.Fatal(err)
	}
	wave, err := widget.Waveform("Handshake", dump, vcd.Options{Radix: vcd.Hex})
	if err != nil {
		t.Fatal(err)
	}
	src := &widget.Source{Name: "top.sv", Language: "systemverilog", Text: "module top #(parameter W = 8) (input logic clk);\nendmodule\n"}
	return []widget.Widget{widget.Graph("Graph", svg, []widget.LegendEntry{{Color: "#bbdefb", Label: "module"}}), line, bars, tb, wave, src}
}

// TestWidgetsInBrowser renders every widget on one standalone page, checks
// in headless Chromium (network off) that each SVG draws and nothing errs,
// then uses them: zoom the graph, sort the table both ways, press the
// download buttons.
func TestWidgetsInBrowser(t *testing.T) {
	dir := os.Getenv("GOMASE_ARTEFACTS") // make test keeps the page and its screenshot
	if dir == "" {
		dir = t.TempDir()
	}
	p := filepath.Join(dir, "widgets.html")
	ws := allWidgets(t)
	// A page whose style sheet shrinks every SVG to its container's width
	// (as Jupyter's output areas do) must not distort the zoomed graph.
	hostile := widget.HTMLWidget(`<style>div.hostile div svg{max-width:100%;height:auto}</style><div class="hostile" style="width:40px">` + ws[0].HTML() + `</div>`)
	if err := widget.WriteHTML(p, "Every widget", append(ws, hostile)...); err != nil {
		t.Fatal(err)
	}
	if err := report.CheckSVGVisible(p); err != nil {
		t.Fatal(err)
	}
	if err := report.Screenshot(context.Background(), p, filepath.Join(dir, "widgets.png"), 1280, 2400); err != nil {
		t.Fatal(err)
	}
	t.Logf("page and screenshot in %s", dir)
	raw, consoleErrs, err := report.RunScript(context.Background(), p, `
  var out = {};
  var g = document.querySelector('.gmw-zoom');
  var svg = g.querySelector('.gmw-view svg');
  out.before = svg.getBoundingClientRect().width;
  g.querySelector('[data-gmw-action="zoom-in"]').click();
  g.querySelector('[data-gmw-action="zoom-in"]').click();
  out.after = svg.getBoundingClientRect().width;
  out.level = g.querySelector('.gmw-zoomlevel').textContent;
  g.querySelector('[data-gmw-action="reset"]').click();
  out.reset = svg.getBoundingClientRect().width;
  var th = document.querySelectorAll('table.gmw-table th')[1];
  function names() { return Array.prototype.map.call(document.querySelectorAll('table.gmw-table tbody tr'), function (r) { return r.cells[0].textContent; }).join(''); }
  th.click(); out.asc = names();
  th.click(); out.desc = names();
  document.querySelectorAll('table.gmw-table th')[0].click(); out.byName = names();
  document.querySelectorAll('[data-gmw-action="svg"], [data-gmw-action="png"]').forEach(function (b) { b.click(); });
  out.installed = window.gomaseWidgets.version;
  var h = document.querySelector('.hostile .gmw-zoom');
  var hs = h.querySelector('.gmw-view svg');
  h.querySelector('[data-gmw-action="zoom-in"]').click();
  var r = hs.getBoundingClientRect();
  out.hostileRatio = (r.width / r.height) / (hs.width.baseVal.value / hs.height.baseVal.value);
  setTimeout(function () { done(out); }, 300);
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(consoleErrs) > 0 {
		t.Errorf("console errors while using the widgets: %q", consoleErrs)
	}
	var got struct {
		Before, After, Reset float64
		Level                string
		Asc, Desc, ByName    string
		Installed            int
		HostileRatio         float64
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Installed != 1 {
		t.Errorf("widget script not installed: %+v", got)
	}
	if got.After < 1.5*got.Before || got.Level != "156%" || got.Reset != got.Before {
		t.Errorf("zoom: width %.0f → %.0f (%s) → reset %.0f; want two 1.25× steps and back", got.Before, got.After, got.Level, got.Reset)
	}
	if got.HostileRatio < 0.99 || got.HostileRatio > 1.01 {
		t.Errorf("zoomed graph under a shrinking style sheet has aspect %.3f of its own; want 1", got.HostileRatio)
	}
	if got.Asc != "bac" || got.Desc != "cab" || got.ByName != "abc" {
		t.Errorf("sorting: ascending %q, descending %q, by name %q; want bac, cab, abc (0.9 < 2 < 10 numerically)", got.Asc, got.Desc, got.ByName)
	}
}
