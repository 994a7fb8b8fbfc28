package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomase/gomase/kernel/runner"
)

// TestLabsBadInputsThroughTheBinary drives bad notebooks and output paths
// through `mase labs` (this test binary re-executed as mase). A good
// notebook comes first in each command line: each must be refused before
// it runs, within seconds, with a one-line error whose last line names the
// real cause, no Go crash, no --out folder made, and the files given left
// as they were.
func TestLabsBadInputsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary many times")
	}
	root, err := runner.Root()
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	good := write("good.ipynb", `{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": "%%\nfmt.Println(1)"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`)
	write("broken.ipynb", "{\"cells\": [\n  {\"cell_type\": \"code\", \"source\": }]}")
	write("latin1.ipynb", "{\"cells\": [{\"cell_type\": \"markdown\", \"metadata\": {}, \"source\": \"caf\xe9\"}], \"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 5}")
	write("empty.ipynb", "")
	write("v3.ipynb", `{"nbformat": 3, "worksheets": []}`)
	write("a-file", "not a folder")
	if err := os.Symlink("/dev/zero", filepath.Join(d, "zero.ipynb")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(d, "fifo.ipynb"), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := write("huge.ipynb", "")
	if err := os.Truncate(filepath.Join(d, huge), 300<<20); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"broken.ipynb"}, "notebook broken.ipynb is not valid JSON: invalid character '}' looking for beginning of value at byte 46 (line 2, column 35)"},
		{[]string{"latin1.ipynb"}, "notebook latin1.ipynb: invalid UTF-8 at byte 67 (line 1, column 68)"},
		{[]string{"empty.ipynb"}, "notebook empty.ipynb is empty"},
		{[]string{"v3.ipynb"}, "notebook format 3 is not supported (allowed: nbformat 4)"},
		{[]string{"zero.ipynb"}, "notebook zero.ipynb is a character device, not a regular file"},
		{[]string{"fifo.ipynb"}, "notebook fifo.ipynb is a named pipe (FIFO), not a regular file"},
		{[]string{"huge.ipynb"}, "notebook huge.ipynb is 300 MiB, more than the 256 MiB allowed for a notebook"},
		{[]string{"missing.ipynb"}, "notebook missing.ipynb: no such file"},
		{[]string{"--screenshots", "a-file"}, "--screenshots a-file is a file, not a folder"},
		{[]string{"--screenshots", "a-file/shots"}, "--screenshots a-file/shots: a-file is a file, not a folder"},
		{[]string{"--out", "a-file"}, "--out a-file is a file, not a folder"},
		{[]string{"--out", "a-file/reports"}, "--out a-file/reports: a-file is a file, not a folder"},
	}
	before := snapshot(t, d)
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := []string{"labs", "--quick", "--out", "reports", good}
			if strings.HasPrefix(c.args[0], "--") {
				args = append(append([]string{"labs", "--quick", "--out", "reports"}, c.args...), good)
			} else {
				args = append(args, c.args...)
			}
			code, _, msg := badRun(t, d, 20*time.Second, []string{"GOMASE_ROOT=" + root}, nil, args...)
			wantRefusal(t, code, msg, c.want)
			if strings.Contains(msg, "\n") {
				t.Errorf("more than one line on stderr: %q", msg)
			}
			if _, err := os.Stat(filepath.Join(d, "reports")); err == nil && !strings.HasPrefix(c.args[0], "--out") {
				os.RemoveAll(filepath.Join(d, "reports"))
				t.Errorf("--out reports was made before the refusal")
			}
		})
	}
	if after := snapshot(t, d); after != before {
		t.Errorf("the files the commands were given changed:\nbefore %s\nafter  %s", before, after)
	}
}
