package main

import (
	"bytes"
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
		{[]string{"labs", "--timeout", "0s"}, 1, "--timeout 0s: must be positive"},
		{[]string{"labs", "--bogus"}, 1, "flag provided but not defined: -bogus"},
		{[]string{"labs", "notes.txt"}, 1, `"notes.txt" is not a notebook`},
		{[]string{"labs", "--quick", "missing.ipynb"}, 1, "missing.ipynb: no such file"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("mase %s: exit %d, output %q; want exit %d and %q", strings.Join(tc.args, " "), code, stdout.String()+stderr.String(), tc.code, tc.want)
		}
	}
}
