// Package ui is the one import a notebook cell needs to show things: text
// and markup, tables, highlighted source, line and bar charts, a
// MaseGraph's drawing, waveforms, a training run's live loss chart, the
// passes' log and the figures a notebook passes from cell to cell. It
// gathers the parts of the packages under mase/ui that cells use (as
// GoNB's gonbui does for GoNB); the views of one lab (rtlview, searchplot,
// profileview) and each part's own options stay in their packages.
//
// Under GoNB everything is drawn under the running cell; elsewhere (a
// terminal REPL, a test) the display calls print nothing and return false.
package ui

import (
	"github.com/gomlx/gomlx/core/tensors"
	"io"
	"log/slog"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/train"
	"github.com/gomase/gomase/mase/ui/display"
	"github.com/gomase/gomase/mase/ui/draw"
	"github.com/gomase/gomase/mase/ui/nb"
	"github.com/gomase/gomase/mase/ui/passlog"
	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/progress"
	"github.com/gomase/gomase/mase/ui/widget"
	"github.com/gomase/gomase/rtl/vcd"
)

// Markdown shows markdown under the cell.
func Markdown(md string) bool { return display.Markdown(md) }

// HTML shows an HTML fragment under the cell.
func HTML(html string) bool { return display.HTML(html) }

// SVG shows an SVG image under the cell.
func SVG(svg string) bool { return display.SVG(svg) }

// Widget is anything Show draws: a table, a figure, source code.
type Widget = widget.Widget

// Show draws widgets under the cell, each once (their scripts and styles
// are shared).
func Show(ws ...Widget) bool { return widget.Show(ws...) }

// Table is a sortable table widget; NewTable starts one.
type Table = widget.Table

// NewTable returns an empty table with a caption and its column names.
func NewTable(caption string, columns ...string) *Table {
	return widget.NewTable(caption, columns...)
}

// Source is a widget of highlighted source code (Go, SystemVerilog).
type Source = widget.Source

// Figure is a widget holding an SVG drawing (zoom, pan, download).
type Figure = widget.Figure

// Waveform draws the signals of a VCD dump as a static waveform figure.
func Waveform(title string, d *vcd.Dump, opts vcd.Options) (*Figure, error) {
	return widget.Waveform(title, d, opts)
}

// Chart is a line or scatter chart; ShowLine draws it.
type Chart = plot.Chart

// Series is one line (or set of points) of a Chart.
type Series = plot.Series

// BarChart is a chart of grouped bars; ShowBars draws it.
type BarChart = plot.BarChart

// BarGroup is one group of bars of a BarChart.
type BarGroup = plot.BarGroup

// ShowLine draws a line chart under the cell; an error stops the cell.
func ShowLine(c Chart) { nb.ShowLine(c) }

// ShowBars draws a bar chart under the cell; an error stops the cell.
func ShowBars(b BarChart) { nb.ShowBars(b) }

// Facts is a notebook's cache of figures, passed from the cell that
// measures them to the cells that read them (GoNB keeps declarations
// between cells, not variables).
type Facts = nb.Facts

// Graph draws a MaseGraph (MASE's mg.draw): under the cell as a zoomable
// figure with a colour legend, and into path when it is set (.svg, .html
// or .dot); outside a notebook and without a path it returns an error.
func Graph(mg *ir.MaseGraph, path string) error { return draw.Graph(mg, path) }

// GraphFigure returns a MaseGraph's drawing as a figure widget (to Show
// it beside others).
func GraphFigure(mg *ir.MaseGraph) (*Figure, error) { return draw.Widget(mg) }

// TrainingProgress is a train.Progress that draws the loss live under the
// cell, titled Title.
type TrainingProgress = progress.Notebook

// LossChart is a finished training run's logged loss as a chart.
func LossChart(title string, h *train.History) Chart { return progress.LossChart(title, h) }

// The passes' log levels (MASE's logger levels).
const (
	PassInfo    = passlog.Info
	PassWarning = passlog.Warning
)

// QuietPasses has the passes log warnings only.
func QuietPasses() { passlog.Quiet() }

// ShowPasses has the passes log from level up (PassInfo: every pass's
// lines, as MASE's logger at "info").
func ShowPasses(level slog.Level) { passlog.Show(level) }

// PassLogger returns a logger writing MASE-style lines to w from level
// up, for a pass written in a notebook.
func PassLogger(w io.Writer, level slog.Level) *slog.Logger { return passlog.New(w, level) }

// TensorText writes a tensor as its shape and values, long rows elided, as
// PyTorch prints one (display.TensorText).
func TensorText(t *tensors.Tensor) string { return display.TensorText(t) }
