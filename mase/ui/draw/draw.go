// Package draw draws a MaseGraph (MASE's mg.draw): Graphviz DOT, SVG, and
// a zoomable widget with a colour legend, inline under GoNB or in a file.
package draw

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomase/gomase/graphviz"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/ui/widget"
)

// nodeKinds gives each node kind a fill colour readable with black text
// and its legend label, in the order the legend shows them.
var nodeKinds = []struct {
	kind          ir.OpKind
	colour, label string
}{
	{ir.Placeholder, "#c8e6c9", "placeholder (input)"}, // green
	{ir.GetAttr, "#e0e0e0", "get_attr (constant)"},     // grey
	{ir.CallModule, "#bbdefb", "call_module"},          // blue: Linear, LayerNorm, ...
	{ir.CallFunction, "#fff9c4", "call_function"},      // yellow: add, matmul, ...
	{ir.CallMethod, "#e1bee7", "call_method"},          // purple: view, size, ...
	{ir.Output, "#ffccbc", "output"},                   // orange
}

// nodeColour is the fill colour of a node kind ("" for none).
func nodeColour(k ir.OpKind) string {
	for _, n := range nodeKinds {
		if n.kind == k {
			return n.colour
		}
	}
	return ""
}

// Legend returns the colour of every node kind of the drawings, in
// the order inputs, constants, modules, functions, methods, output.
func Legend() []widget.LegendEntry {
	out := make([]widget.LegendEntry, len(nodeKinds))
	for i, n := range nodeKinds {
		out[i] = widget.LegendEntry{Color: n.colour, Label: n.label}
	}
	return out
}

// DOT describes the graph in Graphviz DOT: one box per node showing its
// name, kind and target, and — once AddCommonMetadata has run — its
// mase_op and the shapes of its data inputs and outputs.
func DOT(mg *ir.MaseGraph) string {
	d := graphviz.NewDigraph("masegraph")
	d.Attrs["rankdir"] = "TB"
	d.NodeAttrs["shape"] = "box"
	d.NodeAttrs["style"] = "rounded,filled"
	d.NodeAttrs["fontname"] = "Helvetica"
	d.NodeAttrs["fontsize"] = "10"
	d.EdgeAttrs["color"] = "#555555"
	for _, n := range mg.Graph.Nodes() {
		lines := []string{n.Name, fmt.Sprintf("%s: %s", n.Op, n.Target)}
		if n.Op == ir.CallModule {
			if mod, ok := mg.Model.Module(n.Target); ok {
				lines[1] = fmt.Sprintf("%s: %s", n.Op, mod.TypeName())
			}
		}
		if n.Meta != nil && n.Meta.Common.MaseOp != "" {
			c := n.Meta.Common
			lines = append(lines, fmt.Sprintf("mase_op=%s (%s)", c.MaseOp, c.MaseType))
			if s := shapeLine(c.Args, "data_in_"); s != "" {
				lines = append(lines, "in "+s)
			}
			if s := shapeLine(c.Results, "data_out_"); s != "" {
				lines = append(lines, "out "+s)
			}
		}
		// Node names are unique in the graph, so they are safe DOT ids.
		_ = d.AddNode(n.Name, map[string]string{"label": strings.Join(lines, "\n"), "fillcolor": nodeColour(n.Op)})
	}
	for _, n := range mg.Graph.Nodes() {
		for _, in := range n.Inputs() {
			_ = d.AddEdge(in.Name, n.Name, nil)
		}
	}
	return d.String()
}

// shapeLine lists the shapes of the entries whose names start with prefix.
func shapeLine(m *ir.ArgMap, prefix string) string {
	var parts []string
	for _, k := range m.Keys() {
		if strings.HasPrefix(k, prefix) {
			if info := m.Get(k); info != nil && info.Shape != nil {
				parts = append(parts, fmt.Sprint(info.Shape))
			}
		}
	}
	return strings.Join(parts, " ")
}

// SVG renders the graph drawing (see DOT) to SVG in-process.
func SVG(mg *ir.MaseGraph) ([]byte, error) { return graphviz.RenderSVG(DOT(mg)) }

// Widget returns the drawing as a zoomable figure with a legend of the
// node colours, for a notebook (widget.Show) or a page (widget.WriteHTML).
func Widget(mg *ir.MaseGraph) (*widget.Figure, error) {
	svg, err := SVG(mg)
	if err != nil {
		return nil, err
	}
	title := fmt.Sprintf("MaseGraph: %d nodes", len(mg.Graph.Nodes()))
	return widget.Graph(title, svg, Legend()), nil
}

// Graph draws mg (MASE's mg.draw). Under GoNB it is shown inline
// as a zoomable widget with a colour legend; with a non-empty path it is
// also written there: .svg (the drawing), .html (a standalone page holding
// the zoomable widget) or .dot (the DOT source). Outside a notebook and
// without a path it returns an error saying so, rather than drawing
// nowhere.
func Graph(mg *ir.MaseGraph, path string) error {
	if strings.HasSuffix(path, ".dot") {
		return writeFile(path, []byte(DOT(mg)))
	}
	if path != "" && !strings.HasSuffix(path, ".svg") && !strings.HasSuffix(path, ".html") {
		return fmt.Errorf("draw: unsupported file type %q (allowed: .svg, .html, .dot)", filepath.Ext(path))
	}
	w, err := Widget(mg)
	if err != nil {
		return err
	}
	shown := widget.Show(w)
	if strings.HasSuffix(path, ".html") {
		return widget.WriteHTML(path, w.Title, w)
	}
	if path != "" {
		return writeFile(path, w.SVG)
	}
	if !shown {
		return fmt.Errorf("draw: not in a notebook and no file given: pass a path ending in .svg or .dot")
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("draw: %w", err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("draw: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("draw: %w", err)
	}
	return nil
}
