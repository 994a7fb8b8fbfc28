package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/kernel/notebook"
	"github.com/gomase/gomase/mase/limits"
)

// notebookFile bounds the notebooks a run reads (the lab notebooks are
// under 1 MiB; an executed one with its figures a few MiB).
var notebookFile = limits.File{What: "a notebook", Max: 256 << 20}

// LoadNotebook reads and checks the notebook at path before anything runs
// it: a regular .ipynb file within notebookFile's bound, in UTF-8, valid
// JSON, nbformat 4 with known cell types. Each error is one line naming the
// file and, for bad bytes or JSON, the byte offset, line and column.
func LoadNotebook(path string) (*notebook.Notebook, error) {
	data, err := limits.ReadFile(path, notebookFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("notebook %s: no such file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("notebook %w", err)
	}
	return parseNotebook(path, data)
}

// parseNotebook checks and decodes a notebook's bytes (see LoadNotebook).
func parseNotebook(path string, data []byte) (*notebook.Notebook, error) {
	if off := invalidUTF8(data); off >= 0 {
		return nil, fmt.Errorf("notebook %s: invalid UTF-8 at %s (allowed: a UTF-8 JSON file, as Jupyter writes)", path, position(data, int64(off)))
	}
	nb, err := notebook.ParseNotebook(data)
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nb, nil
	case errors.As(err, &syntax):
		off := max(syntax.Offset-1, 0)
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, fmt.Errorf("notebook %s is empty (allowed: a Jupyter notebook, nbformat 4 JSON)", path)
		}
		return nil, fmt.Errorf("notebook %s is not valid JSON: %s at %s (allowed: a Jupyter notebook, nbformat 4 JSON)", path, syntax, position(data, int64(off)))
	case errors.As(err, &typ):
		return nil, fmt.Errorf("notebook %s: %q holds a JSON %s at %s, not what a notebook has there (allowed: nbformat 4)", path, typ.Field, typ.Value, position(data, max(typ.Offset-1, 0)))
	}
	return nil, fmt.Errorf("notebook %s: %w", path, err)
}

// invalidUTF8 is the offset of the first byte of data that is not UTF-8,
// or -1.
func invalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// position describes byte off of data as "byte N (line L, column C)",
// lines and columns counted from 1, columns in bytes.
func position(data []byte, off int64) string {
	off = min(off, int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - int64(bytes.LastIndexByte(before, '\n'))
	return fmt.Sprintf("byte %d (line %d, column %d)", off, line, col)
}

// CheckOutputFolder checks, before any work, that dir (given by flagName)
// can receive files: it is a folder that takes new files, or it is missing
// and the nearest folder above it that exists takes new files (dir is made
// then, with its parents, when the files are written). Nothing is created.
func CheckOutputFolder(flagName, dir string) error {
	probeIn := dir
	for {
		st, err := os.Stat(probeIn)
		if err == nil {
			if !st.IsDir() {
				if probeIn == dir {
					return fmt.Errorf("%s %s is a file, not a folder (allowed: a folder, made if missing)", flagName, dir)
				}
				return fmt.Errorf("%s %s: %s is a file, not a folder, so %s cannot be made (allowed: a folder, made if missing)", flagName, dir, probeIn, dir)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("%s %s: %v", flagName, dir, err)
		}
		parent := filepath.Dir(probeIn)
		if parent == probeIn {
			return fmt.Errorf("%s %s: no folder above it exists", flagName, dir)
		}
		probeIn = parent
	}
	if err := atomicfile.CanWrite(probeIn); err != nil {
		if probeIn == dir {
			return fmt.Errorf("%s %s: cannot write in it: %v (allowed: a folder that takes new files)", flagName, dir, err)
		}
		return fmt.Errorf("%s %s: cannot make it in %s: %v (allowed: a folder that takes new files, or a new one in such a folder)", flagName, dir, probeIn, err)
	}
	return nil
}
