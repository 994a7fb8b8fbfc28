// Package optunatest runs Python with Optuna for tests of gomase's Optuna
// journal export and import: Debian's python3-optuna (3.1) under
// /usr/bin/python3, which `make setup` installs. A test that needs it fails,
// never skips, when it is missing.
package optunatest

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// Python is the interpreter the tests run: Debian's, where apt puts optuna.
const Python = "/usr/bin/python3"

var check = sync.OnceValues(func() (string, error) {
	out, err := exec.Command(Python, "-c", "import optuna; print(optuna.__version__)").CombinedOutput()
	return strings.TrimSpace(string(out)), err
})

// Version returns Optuna's version, failing the test (saying that `make
// setup` installs python3-optuna) when Python or Optuna is missing.
func Version(t testing.TB) string {
	t.Helper()
	v, err := check()
	if err != nil {
		t.Fatalf("%s cannot import optuna (%v: %s); `make setup` installs Debian's python3-optuna (apt-get install python3-optuna)",
			Python, err, lastLine(v))
	}
	return v
}

// Run runs a Python script with args (sys.argv[1:]) and returns its
// standard output; it fails the test, showing the script's standard error,
// when the script fails.
func Run(t testing.TB, script string, args ...string) []byte {
	t.Helper()
	Version(t)
	cmd := exec.Command(Python, append([]string{"-c", script}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return stdout.Bytes()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
