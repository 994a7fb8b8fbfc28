package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLabsArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"labs", "--help"}, 0, "usage: mase labs"},
		{[]string{"labs", "--timeout", "0s"}, 1, `invalid value "0s" for flag -timeout: want a duration above 0`},
		{[]string{"labs", "--bogus"}, 1, "flag provided but not defined: -bogus"},
		{[]string{"labs", "notes.txt"}, 1, `"notes.txt" is not a notebook`},
		{[]string{"labs", "--quick", "missing.ipynb"}, 1, "missing.ipynb: no such file"},
		{[]string{"labs", "--scale", "huge"}, 1, "--scale huge: must be quick, standard or full"},
		{[]string{"labs", "--quick", "--full"}, 1, "give one of them"},
		{[]string{"labs", "--scale", "standard", "--quick"}, 1, "give one of them"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("mase %s: exit %d, output %q; want exit %d and %q", strings.Join(tc.args, " "), code, stdout.String()+stderr.String(), tc.code, tc.want)
		}
	}
}

// TestLabsCheckAndScreenshots runs a small notebook through the real
// kernel with --check and --screenshots: the report and the index pass the
// browser check and both screenshots are written.
func TestLabsCheckAndScreenshots(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gomase kernel")
	}
	out, shots := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	nb := filepath.Join("..", "..", "kernel", "runner", "testdata", "e2e_svg.ipynb")
	if code := run([]string{"labs", "--quick", "--check", "--screenshots", shots, "--out", out, nb}, &stdout, &stderr); code != 0 {
		t.Fatalf("mase labs: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, name := range []string{"index.png", "e2e_svg.png"} {
		st, err := os.Stat(filepath.Join(shots, name))
		if err != nil || st.Size() < 1000 {
			t.Errorf("screenshot %s: %v (size %v)", name, err, st)
		}
	}
	if !strings.Contains(stdout.String(), "screenshot: "+filepath.Join(shots, "index.png")) {
		t.Errorf("output does not name the screenshots:\n%s", stdout.String())
	}
}
