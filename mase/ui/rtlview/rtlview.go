// Package rtlview shows the Lab 4 hardware flow in a notebook: tables of the
// hardware metadata and Verilog parameters, the emitted files, simulation
// reports read back from the simulation's own files, the timing a waveform
// shows, where a component is registered, and synthesis tables. Each
// function returns Markdown or a widget; the notebook's cells display them.
// (The cells of notebooks/lab4_hardware.ipynb are the lab's steps; the
// formatting lives here.)
package rtlview

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/rtl"
)

// Workspace is the directory where a notebook emits its designs and keeps
// the facts one cell measures for a later one: GoNB runs every cell as a
// program of its own and keeps functions and types between cells, not
// variables.
type Workspace struct {
	Dir string
}

// NewWorkspace returns the workspace in the directory dir. A notebook
// passes a folder that outlives its kernel (Lab 4 hardware's is beside the
// labs' checkpoints), so the designs and waveforms a report names are still
// there after the run.
func NewWorkspace(dir string) Workspace { return Workspace{Dir: dir} }

// Reset empties the workspace.
func (w Workspace) Reset() error {
	if err := os.RemoveAll(w.Dir); err != nil {
		return err
	}
	return os.MkdirAll(w.Dir, 0o755)
}

// Design is the directory of the design called name.
func (w Workspace) Design(name string) string { return filepath.Join(w.Dir, name) }

// Save keeps a fact (text) under name for a later cell.
func (w Workspace) Save(name, text string) error {
	return os.WriteFile(filepath.Join(w.Dir, name+".fact"), []byte(text), 0o644)
}

// Fact returns the fact saved under name; the error says which cell to run
// first when it is missing.
func (w Workspace) Fact(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(w.Dir, name+".fact"))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("rtlview: no fact %q in %s: run the cells above first", name, w.Dir)
	}
	return string(b), err
}

// ToolTable is a table of the hardware tools found (name, version, what
// needs it), followed, when err (from rtl.FindTools) is not nil, by the
// missing ones and how to install them.
func ToolTable(found []rtl.FoundTool, err error) string {
	var b strings.Builder
	b.WriteString("| tool | version | needed for |\n|---|---|---|\n")
	for _, t := range found {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", t.Name, cell(t.Version), t.For)
	}
	if err != nil {
		fmt.Fprintf(&b, "\n**%s**\n", strings.ReplaceAll(err.Error(), "\n", "\n\n"))
	}
	return b.String()
}

// NodeTable lists every node of mg with its common and hardware metadata
// (MASE's report_node_type_analysis_pass and the hardware fields), then
// nodes_in and nodes_out.
func NodeTable(mg *ir.MaseGraph) string {
	var b strings.Builder
	b.WriteString("| node | kind | mase_type | mase_op | precision (results) | is_implicit | toolchain | module | interface | dependence_files |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range mg.Nodes() {
		c, hw := n.Meta.Common, n.Meta.Hardware
		prec := ""
		if r := c.Results.Get("data_out_0"); r != nil && r.Type != "" {
			prec = fmt.Sprintf("%s %v", r.Type, r.Precision)
		}
		keys := make([]string, 0, len(hw.Interface))
		for k := range hw.Interface {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var iface []string
		for _, k := range keys {
			iface = append(iface, k+" ("+settings(hw.Interface[k])+")")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %v | %s | %s | %s | %s |\n", n.Name, n.Op, c.MaseType, c.MaseOp, cell(prec),
			hw.IsImplicit, cell(hw.Toolchain), cell(hw.Module), cell(strings.Join(iface, "; ")), cell(strings.Join(hw.DependenceFiles, " ")))
	}
	fmt.Fprintf(&b, "\n`nodes_in` = %v, `nodes_out` = %v\n", mg.Graph.Meta.NodesIn, mg.Graph.Meta.NodesOut)
	return b.String()
}

// settings writes one parameter's interface settings as "key = value"
// pairs sorted by key ("storage = BRAM, transpose = false"), "none" when
// there are none.
func settings(m map[string]any) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s = %v", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// VerilogParams shows the verilog_param list of each hardware node of mg
// (or only of the nodes whose mase_op is one of ops), in MASE's emission
// order (passes.OrderedVerilogParams), three parameters to a row.
func VerilogParams(mg *ir.MaseGraph, ops ...string) string {
	var b strings.Builder
	for _, n := range mg.Nodes() {
		if n.Meta.Hardware.IsImplicit || len(ops) > 0 && !slices.Contains(ops, n.Meta.Common.MaseOp) {
			continue
		}
		ps := passes.OrderedVerilogParams(n)
		fmt.Fprintf(&b, "**%s** (mase_op `%s`, module `%s`): %d verilog parameters\n\n| parameter | value | parameter | value | parameter | value |\n|---|---|---|---|---|---|\n",
			n.Name, n.Meta.Common.MaseOp, n.Meta.Hardware.Module, len(ps))
		for i := 0; i < len(ps); i += 3 {
			b.WriteString("|")
			for j := i; j < i+3; j++ {
				if j < len(ps) {
					fmt.Fprintf(&b, " `%s` | %v |", ps[j].Name, ps[j].Value)
				} else {
					b.WriteString(" | |")
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ParamValue returns the value of the parameter called name, or nil.
func ParamValue(ps []passes.VerilogParam, name string) any {
	for _, p := range ps {
		if p.Name == name {
			return p.Value
		}
	}
	return nil
}

// Reals writes fixed-point integers of format f as their real values.
func Reals(xs []int64, f rtl.Format) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(rtl.Value(x, f), 'g', -1, 64)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Ints writes integers as a list: "[127, 127, -4, -4]".
func Ints(xs []int64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// cell fills an empty table cell with a dash and escapes "|".
func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}
