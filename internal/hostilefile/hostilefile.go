//go:build unix

// Package hostilefile is for tests of loaders: it makes the files that are
// not regular files (a symlink to /dev/zero, a named pipe) which a loader
// must refuse before it reads a byte, and checks that a load refuses one
// at once instead of growing until memory runs out or blocking until a
// writer comes.
package hostilefile

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DevZero makes path a symlink to /dev/zero, a file without end.
func DevZero(t testing.TB, path string) {
	t.Helper()
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
}

// FIFO makes path a named pipe, which blocks a reader until a writer
// comes.
func FIFO(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
}

// Refused runs load and fails t unless it returns, within wait, an error
// of one line that contains want; what names the load in the failure.
func Refused(t testing.TB, what string, load func() error, want string, wait time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- load() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", what, err, want)
		}
	case <-time.After(wait):
		t.Fatalf("%s: still blocked after %v", what, wait)
	}
}
