// Package rtl holds gomase's SystemVerilog component library (the Lab 4
// hardware stream: fixed-point linear, ReLU, Leaky ReLU, casts, skid buffer,
// parameter ROM sources), its testbenches, a driver that builds and runs a
// testbench with Verilator (Icarus Verilog as a fallback), and the integer
// fixed-point models that the RTL must match bit for bit.
//
// The .sv files are embedded, so tools can write the library out anywhere
// (WriteLibrary) without a checkout. See rtl/README.md.
package rtl

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed *.sv tb/*.sv tb/*.svh
var files embed.FS

// Components lists the modules of the library; each lives in <name>.sv.
var Components = []string{
	"skid_buffer",
	"fixed_cast",
	"fixed_dot_product",
	"fixed_linear",
	"fixed_relu",
	"fixed_leaky_relu",
	"fixed_adder",
	"fixed_gelu",
	"fixed_param_source",
}

// Dependencies lists, for a component, the library modules it instantiates
// (itself excluded), so that a design using it can be compiled from them.
var Dependencies = map[string][]string{
	"fixed_linear":     {"fixed_dot_product", "fixed_cast", "skid_buffer"},
	"fixed_relu":       {"fixed_cast"},
	"fixed_leaky_relu": {"fixed_cast"},
	"fixed_adder":      {"skid_buffer", "fixed_cast"},
	"fixed_gelu":       {"fixed_cast"},
}

// Testbenches lists the testbench top modules under tb/ (tb/<name>.sv).
var Testbenches = []string{
	"tb_skid_buffer",
	"tb_fixed_cast",
	"tb_fixed_relu",
	"tb_fixed_leaky_relu",
	"tb_fixed_activation",
	"tb_fixed_param_source",
	"tb_fixed_linear",
	"tb_fixed_adder",
}

// Source returns the SystemVerilog text of a library component.
func Source(component string) (string, error) {
	if !slices.Contains(Components, component) {
		return "", fmt.Errorf("rtl: unknown component %q (have %s)", component, strings.Join(Components, ", "))
	}
	b, err := files.ReadFile(component + ".sv")
	return string(b), err
}

// WriteLibrary writes every library .sv file into dir and returns their paths.
func WriteLibrary(dir string) ([]string, error) {
	var paths []string
	for _, c := range Components {
		p, err := copyEmbedded(c+".sv", dir)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// writeTestbenches writes tb/*.sv and tb/*.svh into dir.
func writeTestbenches(dir string) error {
	entries, err := fs.ReadDir(files, "tb")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, err := copyEmbedded(path.Join("tb", e.Name()), dir); err != nil {
			return err
		}
	}
	return nil
}

func copyEmbedded(name, dir string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, path.Base(name))
	return p, os.WriteFile(p, b, 0o644)
}
