// Command kernelspec writes the "Go (gomase)" Jupyter kernelspec; kernel/setup.sh
// runs it. It rewrites kernel.json only when its content changes (a new
// checkout path, a new gonb location), and prints what it did.
//
// Usage:
//
//	go run ./kernel/cmd/kernelspec -root REPO -gonb /path/to/gonb -data-dir "$(jupyter --data-dir)" [-path DIR:DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomase/gomase/kernel/kernelspec"
)

func main() {
	root := flag.String("root", "", "absolute path of the gomase repository (required)")
	gonb := flag.String("gonb", "", "absolute path of the installed gonb binary (required)")
	dataDir := flag.String("data-dir", "", "Jupyter data directory, the output of `jupyter --data-dir` (required)")
	path := flag.String("path", "", "directories to put first on the kernel's PATH, separated by "+string(os.PathListSeparator))
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q: only the flags -root, -gonb, -data-dir and -path are allowed", flag.Args()))
	}
	if *root == "" || *gonb == "" || *dataDir == "" {
		fail(fmt.Errorf("the flags -root, -gonb and -data-dir are required (got -root=%q -gonb=%q -data-dir=%q)", *root, *gonb, *dataDir))
	}
	if _, err := os.Stat(*gonb); err != nil {
		fail(fmt.Errorf("gonb binary: %w", err))
	}
	var dirs []string
	if *path != "" {
		dirs = filepath.SplitList(*path)
	}
	spec, err := kernelspec.New(kernelspec.Options{Root: *root, GoNB: *gonb, PathDirs: dirs, LogFile: kernelspec.LogFile(*dataDir)})
	if err != nil {
		fail(err)
	}
	changed, err := kernelspec.Write(*dataDir, spec)
	if err != nil {
		fail(err)
	}
	file := filepath.Join(kernelspec.Dir(*dataDir), "kernel.json")
	if changed {
		fmt.Printf("wrote %s (go_work=%s)\n", file, spec.GoWork())
	} else {
		fmt.Printf("unchanged %s\n", file)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kernelspec:", err)
	os.Exit(1)
}
