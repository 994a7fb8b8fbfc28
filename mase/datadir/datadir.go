// Package datadir finds the real data the labs read (vocabularies, IMDb,
// SST-2, ...) without it being committed to the repository.
//
// The data lives in ../shared/data beside a checkout of gomase, or wherever
// GOMASE_DATA_DIR (or SetDir, behind the CLI's --data-dir) points.
// Downloaded files go to a cache directory (CacheDir).
package datadir

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ModulePath is the module whose go.mod marks the repository root.
const ModulePath = "github.com/gomase/gomase"

var (
	mu       sync.Mutex
	override string
)

// SetDir makes path the data directory, ahead of every other source. An
// empty path removes the override.
func SetDir(path string) {
	mu.Lock()
	defer mu.Unlock()
	override = path
}

// Dir returns the data directory. It tries, in order: SetDir's path,
// $GOMASE_DATA_DIR, then <root>/../shared/data for the repository root
// given by $GOMASE_ROOT or found by walking up from the working directory
// or from the executable. The error lists every place it looked.
func Dir() (string, error) {
	mu.Lock()
	o := override
	mu.Unlock()
	if o != "" {
		if isDir(o) {
			return o, nil
		}
		return "", fmt.Errorf("data directory %q (from --data-dir) does not exist", o)
	}
	if env := os.Getenv("GOMASE_DATA_DIR"); env != "" {
		if isDir(env) {
			return env, nil
		}
		return "", fmt.Errorf("data directory %q (from GOMASE_DATA_DIR) does not exist", env)
	}
	var tried []string
	for _, root := range candidateRoots() {
		d := filepath.Join(filepath.Dir(root), "shared", "data")
		if isDir(d) {
			return d, nil
		}
		tried = append(tried, d)
	}
	if len(tried) == 0 {
		tried = append(tried, "(no gomase checkout found above the working directory or the executable)")
	}
	return "", fmt.Errorf("no data directory found; looked in: %s; set GOMASE_DATA_DIR or pass --data-dir", strings.Join(tried, ", "))
}

// Find returns the path of rel inside the data directory, or an error
// naming the full path tried.
func Find(rel string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(d, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("data file %s not found in the data directory (%s)", rel, p)
	}
	return p, nil
}

// CacheDir returns the directory for downloaded files: $GOMASE_CACHE_DIR,
// else the user cache directory's gomase folder. It is created if needed.
func CacheDir() (string, error) {
	d := os.Getenv("GOMASE_CACHE_DIR")
	if d == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory: set GOMASE_CACHE_DIR (%w)", err)
		}
		d = filepath.Join(base, "gomase")
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("creating cache directory: %w", err)
	}
	return d, nil
}

// Root returns the repository root: $GOMASE_ROOT, or the first directory
// above the working directory (then the executable) whose go.mod declares
// the gomase module.
func Root() (string, error) {
	roots := candidateRoots()
	if len(roots) == 0 {
		return "", fmt.Errorf("no gomase checkout found above the working directory or the executable; set GOMASE_ROOT")
	}
	return roots[0], nil
}

func candidateRoots() []string {
	var roots []string
	add := func(r string) {
		for _, x := range roots {
			if x == r {
				return
			}
		}
		roots = append(roots, r)
	}
	if r := os.Getenv("GOMASE_ROOT"); r != "" && isRoot(r) {
		add(r)
	}
	if wd, err := os.Getwd(); err == nil {
		if r := walkUp(wd); r != "" {
			add(r)
		}
	}
	if exe, err := os.Executable(); err == nil {
		if r := walkUp(filepath.Dir(exe)); r != "" {
			add(r)
		}
	}
	return roots
}

func walkUp(dir string) string {
	dir, _ = filepath.Abs(dir)
	for {
		if isRoot(dir) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// isRoot reports whether dir holds the gomase go.mod.
func isRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == ModulePath
		}
	}
	return false
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
