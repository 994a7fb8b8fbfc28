package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomase/gomase/kernel/notebook"
	"github.com/gomase/gomase/kernel/report"
	"github.com/gomase/gomase/mase/limits"
)

// executedNotebook bounds the executed notebooks ownedByLabs reads.
var executedNotebook = limits.File{What: "an executed notebook", Max: 256 << 20}

// ownedByLabs reports whether the executed notebook at path was written by
// mase labs: its metadata says so (execute.py marks it), or the report
// beside it (NAME.html) is one of mase labs' pages. The file must exist.
func ownedByLabs(path string) (bool, error) {
	if ok, err := report.WrittenByLabs(path[:len(path)-len(".ipynb")] + ".html"); ok || err != nil {
		return ok, err
	}
	b, err := limits.ReadFile(path, executedNotebook)
	if err != nil {
		return false, err
	}
	var nb struct {
		Metadata struct {
			Gomase struct {
				ExecutedBy string `json:"executed_by"`
			} `json:"gomase"`
		} `json:"metadata"`
	}
	if json.Unmarshal(b, &nb) != nil {
		return false, nil
	}
	return nb.Metadata.Gomase.ExecutedBy == "mase labs", nil
}

// checkOutputs refuses, before any notebook runs, a run that would
// replace a file mase labs did not write in outDir (an executed notebook,
// a report, the index page) or whose index page would replace a
// notebook's report (a notebook named index).
func checkOutputs(notebooks []string, outDir string) error {
	if st, err := os.Stat(outDir); err == nil && !st.IsDir() {
		return fmt.Errorf("--out %s is a file, not a folder (allowed: a folder, made if missing)", outDir)
	}
	type output struct {
		path string
		ours func(string) (bool, error)
	}
	var outputs []output
	for _, nb := range notebooks {
		name := notebook.Name(nb)
		if name == "index" {
			return fmt.Errorf("notebook %s: its report would be %s, which the run's index page replaces (allowed: any other name; rename the notebook)",
				nb, filepath.Join(outDir, "index.html"))
		}
		outputs = append(outputs, output{filepath.Join(outDir, name+".ipynb"), ownedByLabs}, output{filepath.Join(outDir, name+".html"), report.WrittenByLabs})
	}
	outputs = append(outputs, output{filepath.Join(outDir, "index.html"), report.WrittenByLabs})
	for _, o := range outputs {
		if _, err := os.Lstat(o.path); err != nil {
			continue // nothing there to replace
		}
		ok, err := o.ours(o.path)
		if err != nil {
			return fmt.Errorf("--out %s: %w", outDir, err)
		}
		if !ok {
			return fmt.Errorf("--out %s already holds %s, which mase labs did not write (allowed: a new folder, or one mase labs wrote: move the file or choose another --out)",
				outDir, filepath.Base(o.path))
		}
	}
	return nil
}
