// Package synth runs Yosys on gomase's SystemVerilog components (package
// rtl) and reports synthesis statistics: cell counts by type, an LUT count
// and the number of flip-flops.
//
// Synthesis is Yosys's technology-independent flow, `synth -flatten -top X
// -lut K` (K = 4 unless Options.LUTSize says otherwise), followed by
// `stat -json`. It is used rather than a vendor flow (synth_ice40,
// synth_xilinx) because it needs no cell library, runs in well under a
// second for the small components and a few seconds for fixed_linear, and
// maps all logic — adders and multipliers included, since no DSP blocks are
// inferred — to K-input `$lut` cells, so the LUT count is a plain,
// comparable "LUT-equivalent" figure. Registers come out as Yosys's gate
// level flip-flop cells ($_DFF_P_, $_DFFE_PP_, $_SDFF_PP0_, ...), one per
// bit.
//
// Yosys 0.23 (Debian's) cannot parse unpacked array ports such as
// `logic [W-1:0] data_in_0 [N-1:0]`, which most components use. Before
// synthesis every library file is therefore rewritten so that each unpacked
// array of vectors `[W-1:0] a [N-1:0]` (ports and internal variables) is one
// packed vector `[N*W-1:0] a` with element i at bits [i*W +: W] — the
// library's lane order — and its indexed uses a[e] become part selects. The
// top module's ports are thus the components' lanes concatenated, element 0
// in the least significant bits. The simulation sources are not changed.
//
// Yosys must be on PATH; `make setup` installs it from Debian. When it is
// missing, the functions return an error wrapping ErrNoYosys.
package synth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gomase/gomase/rtl"
)

// ErrNoYosys is returned (wrapped) when the yosys executable is not on PATH.
var ErrNoYosys = errors.New(`synth: yosys is not on PATH; run "make setup" (it installs verilator, iverilog and yosys from Debian)`)

// Design is a design to synthesise: a top module, its parameter overrides
// and the sources it needs.
type Design struct {
	Top    string         // top module
	Params map[string]int // parameter overrides of the top module
	// Sources maps file names to SystemVerilog text. The library components
	// the top is or that the sources name (package rtl) are added with their
	// dependencies, so a design made of them needs no more.
	Sources map[string]string
	// Dir, when set, is where Yosys runs, so that file names the sources
	// read while elaborating ($readmemh ROM files) resolve against it, as
	// they do for the simulator. Nothing is written there.
	Dir string
}

// Options tune the synthesis run.
type Options struct {
	LUTSize int    // inputs per LUT for the `$lut` mapping; 0 means 4
	Yosys   string // the yosys executable; "" looks it up on PATH
}

// Stats are the statistics of one synthesised design.
type Stats struct {
	Top       string         // top module
	LUTSize   int            // inputs per LUT used for the mapping
	Cells     int            // cells of the flattened netlist
	CellTypes map[string]int // cells by Yosys type ($lut, $_DFFE_PP_, ...)
	LUTs      int            // LUT-equivalent estimate: the `$lut` cells
	FlipFlops int            // flip-flop bits (cells whose type contains DFF)
	Latches   int            // latch bits (cells whose type contains DLATCH)
	Wires     int            // wires of the netlist
	WireBits  int            // bits in those wires
	Version   string         // the Yosys version that produced them
	Log       string         // Yosys's output
}

// Other returns the cells that are neither LUTs, flip-flops nor latches
// (constant drivers, buffers, unmapped cells).
func (s *Stats) Other() int { return s.Cells - s.LUTs - s.FlipFlops - s.Latches }

// String summarises the statistics on one line.
func (s *Stats) String() string {
	return fmt.Sprintf("%s: %d cells, %d LUT%d, %d flip-flops, %d latches, %d other",
		s.Top, s.Cells, s.LUTs, s.LUTSize, s.FlipFlops, s.Latches, s.Other())
}

// Component synthesises one library component (one of rtl.Components) with
// the given parameter overrides.
func Component(ctx context.Context, component string, params map[string]int, opts Options) (*Stats, error) {
	if !slices.Contains(rtl.Components, component) {
		return nil, fmt.Errorf("synth: unknown component %q (have %s)", component, strings.Join(rtl.Components, ", "))
	}
	return Run(ctx, Design{Top: component, Params: params}, opts)
}

// Run synthesises a design with Yosys in a temporary directory and parses
// the statistics. A design Yosys rejects gives an error carrying Yosys's
// ERROR lines.
func Run(ctx context.Context, d Design, opts Options) (*Stats, error) {
	yosys := opts.Yosys
	if yosys == "" {
		p, err := exec.LookPath("yosys")
		if err != nil {
			return nil, ErrNoYosys
		}
		yosys = p
	} else if _, err := exec.LookPath(yosys); err != nil {
		return nil, fmt.Errorf("%w (looked for %q)", ErrNoYosys, yosys)
	}
	if d.Top == "" {
		return nil, errors.New("synth: no top module")
	}
	k := opts.LUTSize
	if k == 0 {
		k = 4
	}
	if k < 2 || k > 8 {
		return nil, fmt.Errorf("synth: LUT size %d out of range 2..8", k)
	}
	dir, err := os.MkdirTemp("", "gomase-synth-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	var files []string
	write := func(name, text string) error {
		flat, err := flattenArrays(text)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p := filepath.Join(dir, name)
		files = append(files, p)
		return os.WriteFile(p, []byte(flat), 0o644)
	}
	for _, c := range libraryFor(d) {
		if _, own := d.Sources[c+".sv"]; own {
			continue
		}
		src, err := rtl.Source(c)
		if err != nil {
			return nil, err
		}
		if err := write(c+".sv", src); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(d.Sources))
	for n := range d.Sources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if filepath.Base(n) != n {
			return nil, fmt.Errorf("synth: source name %q must be a plain file name", n)
		}
		if err := write(n, d.Sources[n]); err != nil {
			return nil, err
		}
	}

	var script strings.Builder
	for _, f := range files {
		fmt.Fprintf(&script, "read_verilog -sv %s\n", f)
	}
	params := make([]string, 0, len(d.Params))
	for p := range d.Params {
		params = append(params, p)
	}
	sort.Strings(params)
	for _, p := range params {
		fmt.Fprintf(&script, "chparam -set %s %d %s\n", p, d.Params[p], d.Top)
	}
	fmt.Fprintf(&script, "hierarchy -check -top %s\n", d.Top)
	fmt.Fprintf(&script, "synth -flatten -top %s -lut %d\n", d.Top, k)
	fmt.Fprintf(&script, "tee -q -o %s stat -json\n", filepath.Join(dir, "stat.json"))
	if err := os.WriteFile(filepath.Join(dir, "synth.ys"), []byte(script.String()), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, yosys, "-s", filepath.Join(dir, "synth.ys"))
	cmd.Dir = dir
	if d.Dir != "" {
		cmd.Dir = d.Dir
	}
	out, runErr := cmd.CombinedOutput()
	if runErr != nil {
		return nil, fmt.Errorf("synth: yosys on %s failed (%v): %s", d.Top, runErr, yosysErrors(out))
	}
	js, err := os.ReadFile(filepath.Join(dir, "stat.json"))
	if err != nil {
		return nil, fmt.Errorf("synth: yosys wrote no statistics: %v\n%s", err, rtl.Tail(out, 2000))
	}
	s, err := parseStat(js)
	if err != nil {
		return nil, err
	}
	s.Top, s.LUTSize, s.Log = d.Top, k, string(out)
	return s, nil
}

// libraryFor lists the library components a design needs: its top when
// that is a component, every component named in its sources, and their
// dependencies (rtl.Dependencies). Only those are read, so a component Yosys
// cannot parse (fixed_param_source's string parameter) stays out of the way.
func libraryFor(d Design) []string {
	need := map[string]bool{}
	var add func(c string)
	add = func(c string) {
		if need[c] {
			return
		}
		need[c] = true
		for _, dep := range rtl.Dependencies[c] {
			add(dep)
		}
	}
	for _, c := range rtl.Components {
		if c == d.Top {
			add(c)
			continue
		}
		word := regexp.MustCompile(`\b` + c + `\b`)
		for _, src := range d.Sources {
			if word.MatchString(src) {
				add(c)
				break
			}
		}
	}
	var out []string
	for _, c := range rtl.Components {
		if need[c] {
			out = append(out, c)
		}
	}
	return out
}

type statJSON struct {
	Creator string `json:"creator"`
	Design  struct {
		NumWires     int            `json:"num_wires"`
		NumWireBits  int            `json:"num_wire_bits"`
		NumCells     int            `json:"num_cells"`
		CellsPerType map[string]int `json:"num_cells_by_type"`
	} `json:"design"`
}

// parseStat reads the output of Yosys's `stat -json`.
func parseStat(js []byte) (*Stats, error) {
	var st statJSON
	if err := json.Unmarshal(js, &st); err != nil {
		return nil, fmt.Errorf("synth: parsing yosys stat -json: %v", err)
	}
	s := &Stats{
		Version:   st.Creator,
		Cells:     st.Design.NumCells,
		CellTypes: st.Design.CellsPerType,
		Wires:     st.Design.NumWires,
		WireBits:  st.Design.NumWireBits,
	}
	if s.CellTypes == nil {
		s.CellTypes = map[string]int{}
	}
	for t, n := range s.CellTypes {
		switch {
		case t == "$lut":
			s.LUTs += n
		case strings.Contains(t, "DLATCH"):
			s.Latches += n
		case strings.Contains(t, "DFF"):
			s.FlipFlops += n
		}
	}
	return s, nil
}

// yosysErrors returns Yosys's ERROR lines (with the line before each, which
// often names the pass), or the tail of its output when there are none.
func yosysErrors(out []byte) string {
	lines := strings.Split(string(out), "\n")
	var errs []string
	for _, l := range lines {
		if strings.Contains(l, "ERROR") {
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) == 0 {
		return rtl.Tail(out, 2000)
	}
	return strings.Join(errs, "\n")
}
