package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRunRefusesBadNotebooks: a notebook that is a device, a FIFO, huge,
// not UTF-8 or not JSON is refused by Run in one line naming the file (and
// the byte), before anything runs: no output folder, no report.
func TestRunRefusesBadNotebooks(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	zero := filepath.Join(dir, "zero.ipynb")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.ipynb")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	huge := file("huge.ipynb", "")
	if err := os.Truncate(huge, notebookFile.Max+1); err != nil {
		t.Fatal(err)
	}
	good := `{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`
	for _, c := range []struct {
		path string
		want string
	}{
		{zero, "zero.ipynb is a character device, not a regular file"},
		{fifo, "fifo.ipynb is a named pipe (FIFO), not a regular file"},
		{huge, "more than the 256 MiB allowed for a notebook"},
		{file("latin1.ipynb", "{\"cells\": [{\"cell_type\": \"markdown\", \"metadata\": {},\n \"source\": \"caf\xe9\"}]}"), "latin1.ipynb: invalid UTF-8 at byte 68 (line 2, column 16)"},
		{file("broken.ipynb", "{\"cells\": [\n  {\"cell_type\": oops}]}"), `broken.ipynb is not valid JSON: invalid character 'o' looking for beginning of value at byte 28 (line 2, column 17)`},
		{file("empty.ipynb", ""), "empty.ipynb is empty"},
		{file("cells.ipynb", `{"cells": {"a": 1}, "nbformat": 4}`), `cells.ipynb: "cells" holds a JSON object at byte 10`},
		{file("v3.ipynb", `{"nbformat": 3}`), "notebook format 3 is not supported (allowed: nbformat 4)"},
		{filepath.Join(dir, "missing.ipynb"), "missing.ipynb: no such file"},
	} {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "reports")
			ok := file("ok.ipynb", good)
			results, err := Run(context.Background(), []string{ok, c.path}, Options{Root: root, OutDir: out})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run = %v, %v; want an error with %q", results, err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error has more than one line: %q", err)
			}
			if _, statErr := os.Stat(out); statErr == nil {
				t.Errorf("Run made %s before refusing the notebook", out)
			}
		})
	}
}

// TestCheckOutputFolder: an output folder must be a folder that takes new
// files, or be makeable in one; a file on the way is named.
func TestCheckOutputFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "shots.png")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{dir, ""},
		{filepath.Join(dir, "new", "deeper"), ""},
		{file, "--screenshots " + file + " is a file, not a folder"},
		{filepath.Join(file, "sub"), file + " is a file, not a folder, so " + filepath.Join(file, "sub") + " cannot be made"},
	} {
		err := CheckOutputFolder("--screenshots", c.dir)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckOutputFolder(%s) = %v, want %q", c.dir, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("CheckOutputFolder made a folder")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("CheckOutputFolder left files: %v", entries)
	}
	if os.Geteuid() != 0 { // root writes anywhere
		locked := filepath.Join(dir, "locked")
		if err := os.Mkdir(locked, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := CheckOutputFolder("--out", filepath.Join(locked, "reports")); err == nil || !strings.Contains(err.Error(), "cannot make it in "+locked) {
			t.Errorf("a folder in a read-only folder: %v", err)
		}
	}
}

// FuzzLoadNotebook: whatever the bytes, the notebook check never panics,
// refuses in one line naming the file, and accepts only UTF-8 JSON that
// decodes as nbformat 4.
func FuzzLoadNotebook(f *testing.F) {
	for _, seed := range []string{
		`{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`,
		`{"cells": [{"cell_type": "code", "source": ["%%\n", "fmt.Println(1)"], "metadata": {}, "outputs": []}], "nbformat": 4}`,
		"{\"cells\": [{\"cell_type\": \"markdown\", \"source\": \"caf\xe9\"}], \"nbformat\": 4}",
		"{\"cells\": [\n  {\"cell_type\": oops}]}",
		`{"cells": {"a": 1}, "nbformat": 4}`, `{"nbformat": 3}`, "", "\xef\xbb\xbf{}", "[]",
	} {
		f.Add([]byte(seed))
	}
	path := filepath.Join(f.TempDir(), "fuzz.ipynb")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		nb, err := LoadNotebook(path)
		if err != nil {
			if nb != nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), path) {
				t.Fatalf("refusal %q (notebook %v): want one line naming the file and no notebook", err, nb)
			}
			return
		}
		if nb.NBFormat != 4 || invalidUTF8(data) >= 0 {
			t.Fatalf("accepted %q as nbformat %d", data, nb.NBFormat)
		}
	})
}
