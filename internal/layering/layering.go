// Package layering checks the import rules of docs/architecture.md: each
// package's layer is read from its path, and imports point down only.
package layering

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Module is the import path prefix of gomase's packages.
const Module = "github.com/gomase/gomase/"

// The layers, named as docs/architecture.md names them.
const (
	Command        = "command"
	Harness        = "harness"
	LabApplication = "lab application"
	UI             = "ui"
	Library        = "library"
	RTL            = "rtl"
	Kernels        = "kernels"
	Graphviz       = "graphviz"
	Internal       = "internal"
	Other          = "other"
)

// folders maps a folder to the layer of every package under it; the
// longest folder that holds a package decides.
var folders = map[string]string{
	"cmd":      Command,
	"kernel":   Harness,
	"mase/lab": LabApplication,
	"mase/ui":  UI,
	"mase":     Library,
	"rtl":      RTL,
	"kernels":  Kernels,
	"graphviz": Graphviz,
	"internal": Internal,
}

// Layer returns the layer of a package path relative to Module.
func Layer(p string) string {
	best, layer := "", Other
	for dir, l := range folders {
		if under(p, dir) && len(dir) > len(best) {
			best, layer = dir, l
		}
	}
	return layer
}

// under reports whether package p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// underAny reports whether package p is one of dirs or below one.
func underAny(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return under(p, d) })
}

// atomicFile is the one internal package that library code may import.
const atomicFile = "internal/atomicfile"

// Forbidden says why package p (in layer from) may not import package d (in
// layer to), or "" when it may.
func Forbidden(p, from, d, to string) string {
	switch {
	case from == to && from != Kernels:
		return ""
	case to == Harness && from != Command:
		return "only commands import the notebook harness (kernel/)"
	case to == Command:
		return "nothing imports a command"
	case to == UI && (from == Library || from == Kernels || from == RTL || from == Graphviz):
		return "the library reports through callbacks; it imports no UI package"
	case to == LabApplication && (from == Library || from == UI || from == Kernels || from == RTL || from == Graphviz):
		return "lab applications (mase/lab/) sit above the library and the UI"
	case from == Kernels && (to == Library || to == RTL):
		return "kernels are leaves: they import no mase package"
	case to == RTL && (from == Library || from == LabApplication || from == Kernels):
		return "rtl/ is imported only by the RTL flow, the UI and commands"
	case to == Internal && (from == Kernels || from == Graphviz):
		return "kernels and graphviz are leaves: they import nothing of gomase"
	case to == Internal && d != atomicFile:
		return "internal/ is test support, imported only by tests (internal/atomicfile excepted)"
	}
	return ""
}

// Package is one package, what it imports and what it depends on, as
// `go list -json` says.
type Package struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// GPUBinding is the package of CUDA driver bindings; only the package that
// runs kernels on a backend imports it.
const GPUBinding = "kernels/cuda"

// gpuBindingImporters may import GPUBinding: the backend (which probes and
// registers the CUDA custom calls) and the kernels beside it.
var gpuBindingImporters = []string{"mase/backend", "kernels"}

// graphCore are the packages of the graph and its modules, which hold no
// backend: a MaseGraph can be traced, drawn and transformed without one.
var graphCore = []string{"mase/ir", "mase/nn"}

// backendPackages are what the graph core may not depend on.
var backendPackages = []string{"mase/backend", "kernels"}

// Breaks returns each dependency of pkgs that breaks a rule, as
// "from -> to (layer -> layer): why", sorted.
func Breaks(pkgs []Package) []string {
	var broken []string
	for _, pkg := range pkgs {
		p, ok := strings.CutPrefix(pkg.ImportPath, Module)
		if !ok {
			continue
		}
		for _, imp := range pkg.Imports {
			if imp == Module+GPUBinding && !underAny(p, gpuBindingImporters) {
				broken = append(broken, fmt.Sprintf("%s -> %s (imports): only %s import the GPU bindings", p, GPUBinding, strings.Join(gpuBindingImporters, ", ")))
			}
		}
		if slices.Contains(graphCore, p) {
			for _, dep := range pkg.Deps {
				if d, ok := strings.CutPrefix(dep, Module); ok && underAny(d, backendPackages) {
					broken = append(broken, fmt.Sprintf("%s -> %s (graph core -> backend): the graph and its modules hold no backend", p, d))
				}
			}
		}
		from := Layer(p)
		for _, dep := range pkg.Deps {
			d, ok := strings.CutPrefix(dep, Module)
			if !ok {
				continue
			}
			to := Layer(d)
			if why := Forbidden(p, from, d, to); why != "" {
				broken = append(broken, fmt.Sprintf("%s -> %s (%s -> %s): %s", p, d, from, to, why))
			}
		}
	}
	sort.Strings(broken)
	return broken
}
