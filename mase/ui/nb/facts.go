package nb

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/janpfeifer/must"

	"github.com/gomase/gomase/internal/atomicfile"
)

// Facts is a notebook's cache of figures: a JSON file of name → text.
// GoNB runs every cell as a program of its own and keeps the functions
// and types that earlier cells declared, not their variables; a cell that
// measures a figure records it with Set, and a later cell (the closing
// table of the report) reads it with Get. Like ShowLine, both stop the
// cell on an error.
type Facts struct {
	// Path is the JSON file.
	Path string
}

// Set records value under name, keeping the other facts.
func (f Facts) Set(name, value string) {
	all := f.All()
	all[name] = value
	b, err := json.MarshalIndent(all, "", "  ")
	must.M(err)
	must.M(atomicfile.Write(atomicfile.File{Path: f.Path, Data: append(b, '\n')}))
}

// Get returns the fact recorded under name. A fact never recorded stops
// the cell with an error that names it: run the cell that measures it.
func (f Facts) Get(name string) string {
	v, ok := f.All()[name]
	if !ok {
		must.M(fmt.Errorf("nb: no fact %q in %s: run the cell that measures it first", name, f.Path))
	}
	return v
}

// All returns every recorded fact (none when the file does not exist yet).
func (f Facts) All() map[string]string {
	all := map[string]string{}
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return all
	}
	must.M(err)
	if err := json.Unmarshal(b, &all); err != nil {
		must.M(fmt.Errorf("nb: facts file %s: %w", f.Path, err))
	}
	return all
}
