package rtl

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Tool is an external program the hardware flow runs.
type Tool struct {
	Name       string // the executable, looked up on PATH
	For        string // what needs it
	Install    string // the command that installs it
	VersionArg string // the flag that prints its version
}

// HardwareTools are the programs the Lab 4 hardware flow needs: Verilator
// (simulation, lint), the C++ compiler and make that Verilator builds its
// models with, and Yosys (synthesis).
var HardwareTools = []Tool{
	{Name: "verilator", For: "simulation (emit.Simulate, the component testbenches)", Install: "make setup", VersionArg: "--version"},
	{Name: "g++", For: "compiling the C++ model Verilator writes", Install: "sudo apt-get install g++ make", VersionArg: "--version"},
	{Name: "make", For: "running Verilator's build", Install: "sudo apt-get install g++ make", VersionArg: "--version"},
	{Name: "yosys", For: "synthesis (emit.Synthesize, synth.Component)", Install: "make setup", VersionArg: "-V"},
}

// FoundTool is a Tool found on PATH.
type FoundTool struct {
	Tool
	Path    string
	Version string // the first line of its version output
}

// FindTools looks every tool up on PATH and returns those found. The error
// names each missing tool, what needs it and the command that installs it.
func FindTools(tools ...Tool) ([]FoundTool, error) {
	var found []FoundTool
	var missing []string
	for _, t := range tools {
		p, err := exec.LookPath(t.Name)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s): install it with `%s`", t.Name, t.For, t.Install))
			continue
		}
		v := ""
		if t.VersionArg != "" {
			v = firstLine(p, t.VersionArg)
		}
		found = append(found, FoundTool{Tool: t, Path: p, Version: v})
	}
	if len(missing) > 0 {
		return found, errors.New("missing tools, not on PATH:\n  - " + strings.Join(missing, "\n  - "))
	}
	return found, nil
}
