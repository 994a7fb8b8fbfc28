// Package testinputs lets go test's cache see the inputs a test reads
// through another process (go list, go vet): the cache reruns a test only
// when a file the test itself looked at, or an environment variable it
// read, has changed.
package testinputs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// GoSources stats every Go file, go.mod and go.sum below root, so that go
// test's cache reruns the calling test when any of them changes. It skips
// the folders the go command ignores (names starting with "." or "_",
// which includes .git) and node_modules, and files or folders that vanish
// while it walks (another test's temporary folder); a root that cannot be
// read fails the test.
func GoSources(tb testing.TB, root string) {
	tb.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != root && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if name := d.Name(); strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" {
			if _, err := os.Stat(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}
