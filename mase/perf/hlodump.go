package perf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HLOModule is one module XLA compiled, as it wrote it after its
// optimisations (backend.EnableXLADump): the fusions it formed and the
// kernels and library calls it chose.
type HLOModule struct {
	// File is the dump's file name; Name the module's, from it.
	File string `json:"file"`
	Name string `json:"name"`
	// Bytes is the file's size; Text its first MaxHLOText bytes
	// (Truncated says whether that is all of it).
	Bytes     int64  `json:"bytes"`
	Text      string `json:"-"`
	Truncated bool   `json:"truncated"`
}

// Bounds of ReadHLODump: the modules it reads and the text it keeps of
// each.
const (
	MaxHLOModules = 200
	MaxHLOText    = 1 << 20
)

// hloSuffix ends the name of the file XLA writes a module to after its
// optimisations (module_0012.jit_fn.sm_9.0_gpu_after_optimizations.txt).
const hloSuffix = "after_optimizations.txt"

// ReadHLODump reads the optimised modules XLA dumped into dir, in file
// name order (XLA numbers them in compile order): at most MaxHLOModules,
// each cut at MaxHLOText bytes.
func ReadHLODump(dir string) ([]HLOModule, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("XLA dump: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), hloSuffix) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	var mods []HLOModule
	for _, name := range names[:min(len(names), MaxHLOModules)] {
		m, err := readHLO(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	return mods, nil
}

func readHLO(path string) (HLOModule, error) {
	f, err := os.Open(path)
	if err != nil {
		return HLOModule{}, fmt.Errorf("XLA dump: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return HLOModule{}, fmt.Errorf("XLA dump: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxHLOText))
	if err != nil {
		return HLOModule{}, fmt.Errorf("XLA dump: %w", err)
	}
	file := filepath.Base(path)
	name := strings.TrimRight(strings.TrimSuffix(file, hloSuffix), "._")
	if _, rest, ok := strings.Cut(name, "."); ok { // module_0012.jit_fn.sm_9.0_gpu → jit_fn.sm_9.0_gpu
		name = rest
	}
	return HLOModule{File: file, Name: name, Bytes: st.Size(), Text: string(b), Truncated: st.Size() > int64(len(b))}, nil
}
