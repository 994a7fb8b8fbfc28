// Package datadir finds the real data the labs read (vocabularies, IMDb,
// SST-2, ...) without it being committed to the repository, and the cache
// directory that downloads go to.
//
// The data directory is, in order of precedence:
//
//  1. the path given to SetDir (the CLI's --data-dir flag);
//  2. $GOMASE_DATA_DIR;
//  3. <root>/../shared/data, where <root> is the gomase checkout named by
//     $GOMASE_ROOT (notebooks run in a temporary directory, so the kernel
//     sets it), or the first directory whose go.mod declares the module
//     github.com/gomase/gomase found walking up from the working directory,
//     or from the running executable's directory.
//
// An explicit choice (1 or 2) that does not exist is an error of its own;
// the search (3) failing returns an error wrapping ErrNotFound that lists
// every place it looked.
package datadir

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// ModulePath is the module whose go.mod marks the repository root.
const ModulePath = "github.com/gomase/gomase"

// Environment variables read by this package.
const (
	// EnvDataDir names the data directory directly.
	EnvDataDir = "GOMASE_DATA_DIR"
	// EnvRoot names the gomase checkout; the data is <root>/../shared/data.
	EnvRoot = "GOMASE_ROOT"
	// EnvCacheDir names the directory downloads are cached in.
	EnvCacheDir = "GOMASE_CACHE_DIR"
)

// ErrNotFound is wrapped by the errors of Dir, Find and Root when the
// search found nothing (as opposed to an explicitly configured directory
// that is wrong). Callers with a fallback, such as a download, test for it
// with errors.Is.
var ErrNotFound = errors.New("not found")

var (
	mu       sync.Mutex
	override string

	// executable is os.Executable, replaced in tests.
	executable = os.Executable
)

// SetDir makes path the data directory, ahead of every other source; it is
// meant for a command's --data-dir flag. An empty path removes the
// override.
func SetDir(path string) {
	mu.Lock()
	defer mu.Unlock()
	override = path
}

// Dir returns the data directory (see the package documentation for the
// order in which it is looked for).
func Dir() (string, error) {
	mu.Lock()
	o := override
	mu.Unlock()
	if o != "" {
		return explicitDir(o, "--data-dir (datadir.SetDir)")
	}
	if env := os.Getenv(EnvDataDir); env != "" {
		return explicitDir(env, "$"+EnvDataDir)
	}
	var tried []string
	roots, notes := candidateRoots()
	for _, r := range roots {
		d := filepath.Join(filepath.Dir(r.dir), "shared", "data")
		if isDir(d) {
			return d, nil
		}
		tried = append(tried, fmt.Sprintf("%s (checkout %s from %s; no such directory)", d, r.dir, r.source))
	}
	tried = append(tried, notes...)
	return "", fmt.Errorf("data directory %w; looked in: %s; fix: set %s to the directory holding the data (the one with bert-base-uncased/vocab.txt), or pass --data-dir",
		ErrNotFound, strings.Join(tried, "; "), EnvDataDir)
}

// explicitDir checks a directory the user named through source.
func explicitDir(path, source string) (string, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("data directory %q given by %s does not exist; give an existing directory", path, source)
	case err != nil:
		return "", fmt.Errorf("data directory %q given by %s: %w", path, source, err)
	case !st.IsDir():
		return "", fmt.Errorf("data directory %q given by %s is a file, not a directory", path, source)
	}
	return path, nil
}

// Find returns the path of rel, a slash-separated path relative to the
// data directory (such as "bert-base-uncased/vocab.txt"). When the file is
// missing, the error names the full path tried and wraps ErrNotFound.
func Find(rel string) (string, error) {
	if rel == "" || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("data file %q: want a non-empty relative path that stays inside the data directory", rel)
	}
	d, err := Dir()
	if err != nil {
		return "", fmt.Errorf("data file %s: %w", rel, err)
	}
	p := filepath.Join(d, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("data file %s %w: %s does not exist", rel, ErrNotFound, p)
		}
		return "", fmt.Errorf("data file %s: %w", rel, err)
	}
	return p, nil
}

// CacheDir returns the directory downloaded files are kept in:
// $GOMASE_CACHE_DIR, else the gomase folder of the user cache directory
// (os.UserCacheDir). It does not create the directory.
func CacheDir() (string, error) {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set %s (%w)", EnvCacheDir, err)
	}
	return filepath.Join(base, "gomase"), nil
}

// Root returns the gomase checkout: $GOMASE_ROOT when it holds the gomase
// go.mod, else the first directory above the working directory (then above
// the executable) that does. The error lists where it looked and wraps
// ErrNotFound.
func Root() (string, error) {
	roots, notes := candidateRoots()
	for _, r := range roots {
		if isRoot(r.dir) {
			return r.dir, nil
		}
		notes = append(notes, fmt.Sprintf("%s (from %s) has no go.mod declaring module %s", r.dir, r.source, ModulePath))
	}
	return "", fmt.Errorf("gomase checkout %w; looked in: %s; fix: set %s to the checkout",
		ErrNotFound, strings.Join(notes, "; "), EnvRoot)
}

// root is one candidate checkout and where it came from.
type root struct{ dir, source string }

// candidateRoots returns the checkouts to try, best first, and a note for
// every source that gave none.
func candidateRoots() (roots []root, notes []string) {
	add := func(dir, source string) {
		for _, r := range roots {
			if r.dir == dir {
				return
			}
		}
		roots = append(roots, root{dir, source})
	}
	if r := os.Getenv(EnvRoot); r != "" {
		if abs, err := filepath.Abs(r); err == nil && isDir(abs) {
			add(abs, "$"+EnvRoot)
		} else {
			notes = append(notes, fmt.Sprintf("$%s=%s (no such directory)", EnvRoot, r))
		}
	} else {
		notes = append(notes, fmt.Sprintf("$%s (not set)", EnvRoot))
	}
	walk := func(start, source string) {
		if r := walkUp(start); r != "" {
			add(r, "walking up from "+source)
			return
		}
		notes = append(notes, fmt.Sprintf("every directory above %s %s (none has a go.mod declaring module %s)", source, start, ModulePath))
	}
	if wd, err := os.Getwd(); err == nil {
		walk(wd, "the working directory")
	} else {
		notes = append(notes, fmt.Sprintf("the working directory (unknown: %v)", err))
	}
	if exe, err := executable(); err == nil {
		walk(filepath.Dir(exe), "the executable")
		if real, err := filepath.EvalSymlinks(exe); err == nil && filepath.Dir(real) != filepath.Dir(exe) {
			walk(filepath.Dir(real), "the executable's target")
		}
	} else {
		notes = append(notes, fmt.Sprintf("the executable's directory (unknown: %v)", err))
	}
	return roots, notes
}

// walkUp returns the first directory from dir upwards that is a gomase
// checkout, or "".
func walkUp(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
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

// isRoot reports whether dir holds a go.mod declaring ModulePath.
func isRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || fields[0] != "module" {
			continue
		}
		path := fields[1]
		if unq, err := strconv.Unquote(path); err == nil {
			path = unq
		}
		return path == ModulePath
	}
	return false
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
