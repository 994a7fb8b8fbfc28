// Command notebooks writes the lab notebooks (notebooks/NAME.ipynb) from
// their sources (notebooks/src/NAME.gonb, see nbsource.ParseSource). Run it from
// the repository root after editing a source:
//
//	go run ./kernel/cmd/notebooks          # rewrite every notebook
//	go run ./kernel/cmd/notebooks -check   # exit 1 if a notebook differs from its source
//	go run ./kernel/cmd/notebooks -fmt     # gofmt the sources' Go cells first
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomase/gomase/kernel/nbsource"
)

func main() {
	check := flag.Bool("check", false, "write nothing; exit 1 if a notebook differs from its source")
	fmtCells := flag.Bool("fmt", false, "gofmt the Go cells of the sources (rewriting them) before generating")
	dir := flag.String("dir", "notebooks", "the folder holding the notebooks and src/")
	flag.Parse()
	if *fmtCells && !*check {
		if err := formatSources(*dir); err != nil {
			fmt.Fprintln(os.Stderr, "notebooks:", err)
			os.Exit(1)
		}
	}
	if err := run(*dir, *check); err != nil {
		fmt.Fprintln(os.Stderr, "notebooks:", err)
		os.Exit(1)
	}
}

func run(dir string, check bool) error {
	srcs, err := filepath.Glob(filepath.Join(dir, "src", "*"+nbsource.SourceExt))
	if err != nil {
		return err
	}
	if len(srcs) == 0 {
		return fmt.Errorf("no %s sources in %s", nbsource.SourceExt, filepath.Join(dir, "src"))
	}
	var stale []string
	for _, src := range srcs {
		name := strings.TrimSuffix(filepath.Base(src), nbsource.SourceExt)
		want, err := nbsource.NotebookFromSource(name, src)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, name+".ipynb")
		have, _ := os.ReadFile(out)
		if bytes.Equal(have, want) {
			continue
		}
		if check {
			stale = append(stale, out)
			continue
		}
		if err := os.WriteFile(out, want, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", out)
	}
	if len(stale) > 0 {
		return fmt.Errorf("%s differ from their sources: run go run ./kernel/cmd/notebooks", strings.Join(stale, ", "))
	}
	return nil
}

// formatSources rewrites every source with its Go cells gofmt-ed.
func formatSources(dir string) error {
	srcs, err := filepath.Glob(filepath.Join(dir, "src", "*"+nbsource.SourceExt))
	if err != nil {
		return err
	}
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		cells, err := nbsource.ParseSource(b)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		for i, c := range cells {
			if c.Kind != "code" {
				continue
			}
			if cells[i].Text, err = nbsource.FormatCell(c.Text); err != nil {
				return fmt.Errorf("%s cell %d: %w", src, i+1, err)
			}
		}
		out := nbsource.FormatSource(nbsource.SourceHeader(b), cells)
		if !bytes.Equal(out, b) {
			if err := os.WriteFile(src, out, 0o644); err != nil {
				return err
			}
			fmt.Println("formatted", src)
		}
	}
	return nil
}
