// Package nb holds helpers for the lab notebooks' cells: what more than one
// notebook would otherwise declare again. Cells stop on an error with
// github.com/janpfeifer/must (must.M(err), v := must.M1(f())), which the
// notebooks import beside this package; helpers that only one notebook
// needs stay in that notebook.
//
// nb is in the UI layer (docs/architecture.md), not with the lab
// applications: it shows widgets, and package widget imports rtl/vcd,
// which lab applications may not depend on.
package nb

import (
	"fmt"

	"github.com/janpfeifer/must"

	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/widget"
)

// ShowLine draws a line or scatter chart (plot.Chart) and shows it under
// the cell, where it also lands in the HTML report `mase labs` writes;
// outside a notebook it only draws it. A chart that cannot be drawn stops
// the cell: ShowLine panics with an error naming the chart.
func ShowLine(c plot.Chart) {
	f, err := widget.LineChart(c)
	must.M(chartError("line chart", c.Title, err))
	widget.Show(f)
}

// ShowBars is ShowLine for a grouped bar chart (plot.BarChart).
func ShowBars(b plot.BarChart) {
	f, err := widget.BarChart(b)
	must.M(chartError("bar chart", b.Title, err))
	widget.Show(f)
}

// chartError wraps err, if any, with the kind and title of the chart.
func chartError(kind, title string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("nb: cannot draw the %s %q: %w", kind, title, err)
}
