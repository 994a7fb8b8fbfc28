package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CUDAPluginEnv names the environment variable that points "xla:cuda" at
// one CUDA PJRT plugin file; when set, nothing else is searched.
const CUDAPluginEnv = "GOMASE_CUDA_PLUGIN"

// pjrtPluginPathsEnv is go-xla's list of PJRT plugin directories
// (pjrt.PJRTPluginPathsEnv), ":"-separated.
const pjrtPluginPathsEnv = "PJRT_PLUGIN_LIBRARY_PATH"

// jaxCUDAPlugin is where JAX's CUDA PJRT plugin lies under a Python
// site-packages directory: pip's jax-cuda12-pjrt (or jax-cuda13-pjrt)
// package, installed by `pip install "jax[cuda12]"`.
const jaxCUDAPlugin = "jax_plugins/xla_cuda*/xla_cuda_plugin.so"

// goxlaCUDAPlugin is the file name go-xla's installer gives the CUDA
// plugin in the standard PJRT plugin directories.
const goxlaCUDAPlugin = "pjrt_c_api_cuda_plugin.so"

// CUDASearch is where FindCUDAPlugin looks for a CUDA PJRT plugin.
type CUDASearch struct {
	// Explicit is the value of GOMASE_CUDA_PLUGIN ("" when unset). When
	// set it is the answer: it must be a file, and nothing is searched.
	Explicit string
	// Globs are file patterns (filepath.Glob syntax), in order of
	// preference: JAX's plugin under each Python site-packages directory,
	// then the standard PJRT plugin directories.
	Globs []string
}

// DefaultCUDASearch is the search for this process: its environment, the
// user's home directory and the real filesystem.
func DefaultCUDASearch() CUDASearch {
	home, _ := os.UserHomeDir()
	return NewCUDASearch("/", home, os.Getenv)
}

// NewCUDASearch builds the CUDA plugin search from an environment
// (getenv), the home directory (home, "" for none) and a filesystem root
// under which the fixed system locations are taken ("/" for real use; a
// temporary directory in tests). Paths read from the environment are used
// as they are. In order:
//
//  1. GOMASE_CUDA_PLUGIN, if set (CUDASearch.Explicit);
//  2. jax_plugins/xla_cuda*/xla_cuda_plugin.so under the site-packages of
//     $VIRTUAL_ENV, $CONDA_PREFIX, each $PYTHONPATH entry, each Python
//     prefix on $PATH (a …/bin holding python3 or python), the user's
//     ~/.local/lib/python3*, then the system's /usr/local/lib/python3*,
//     /usr/lib/python3*, /usr/lib64/python3* and /opt/conda;
//  3. pjrt_c_api_cuda_plugin.so in go-xla's plugin directories:
//     $PJRT_PLUGIN_LIBRARY_PATH when set, otherwise ~/.local/lib/go-xla
//     (and its nvidia/), ~/.local/lib/gomlx/pjrt, /usr/local/lib/go-xla
//     (and its nvidia/), /usr/local/lib/gomlx/pjrt; then $LD_LIBRARY_PATH.
func NewCUDASearch(root, home string, getenv func(string) string) CUDASearch {
	s := CUDASearch{Explicit: getenv(CUDAPluginEnv)}
	add := func(literal, pattern string) {
		g := filepath.Join(escapeGlob(filepath.Clean(literal)), pattern)
		if !slices.Contains(s.Globs, g) {
			s.Globs = append(s.Globs, g)
		}
	}
	sysPath := func(p string) string { return filepath.Join(root, p) }

	// 2. JAX's plugin under Python's site-packages directories.
	sitePackages := func(prefix string) {
		add(prefix, filepath.Join("lib", "python3*", "site-packages", jaxCUDAPlugin))
	}
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := getenv(env); filepath.IsAbs(p) {
			sitePackages(p)
		}
	}
	for _, p := range filepath.SplitList(getenv("PYTHONPATH")) {
		if filepath.IsAbs(p) {
			add(p, jaxCUDAPlugin)
		}
	}
	for _, prefix := range pythonPrefixes(filepath.SplitList(getenv("PATH"))) {
		sitePackages(prefix)
	}
	if home != "" {
		add(filepath.Join(home, ".local"), filepath.Join("lib", "python3*", "site-packages", jaxCUDAPlugin))
	}
	add(sysPath("/usr/local/lib"), filepath.Join("python3*", "site-packages", jaxCUDAPlugin))
	add(sysPath("/usr/local/lib"), filepath.Join("python3*", "dist-packages", jaxCUDAPlugin))
	add(sysPath("/usr/lib"), filepath.Join("python3*", "site-packages", jaxCUDAPlugin))
	add(sysPath("/usr/lib"), filepath.Join("python3", "dist-packages", jaxCUDAPlugin))
	add(sysPath("/usr/lib64"), filepath.Join("python3*", "site-packages", jaxCUDAPlugin))
	sitePackages(sysPath("/opt/conda"))

	// 3. go-xla's standard PJRT plugin directories.
	if dirs := getenv(pjrtPluginPathsEnv); dirs != "" {
		for _, d := range strings.Split(dirs, ":") {
			if filepath.IsAbs(d) {
				add(d, goxlaCUDAPlugin)
			}
		}
	} else {
		if home != "" {
			add(filepath.Join(home, ".local/lib/go-xla"), goxlaCUDAPlugin)
			add(filepath.Join(home, ".local/lib/go-xla/nvidia"), goxlaCUDAPlugin)
			add(filepath.Join(home, ".local/lib/gomlx/pjrt"), goxlaCUDAPlugin)
		}
		add(sysPath("/usr/local/lib/go-xla"), goxlaCUDAPlugin)
		add(sysPath("/usr/local/lib/go-xla/nvidia"), goxlaCUDAPlugin)
		add(sysPath("/usr/local/lib/gomlx/pjrt"), goxlaCUDAPlugin)
	}
	for _, d := range filepath.SplitList(getenv("LD_LIBRARY_PATH")) {
		if filepath.IsAbs(d) {
			add(d, goxlaCUDAPlugin)
		}
	}
	return s
}

// pythonPrefixes returns, for each directory of a PATH list that is named
// bin and holds a python3 or python, its parent (the Python prefix, whose
// lib/python3.X/site-packages holds the packages — a virtual environment
// included, as its bin/python is a link out of it).
func pythonPrefixes(path []string) []string {
	var prefixes []string
	for _, dir := range path {
		if !filepath.IsAbs(dir) || filepath.Base(filepath.Clean(dir)) != "bin" {
			continue
		}
		for _, exe := range []string{"python3", "python"} {
			if isFile(filepath.Join(dir, exe)) {
				prefixes = append(prefixes, filepath.Dir(filepath.Clean(dir)))
				break
			}
		}
	}
	return prefixes
}

// Find returns the CUDA plugin: Explicit when set (it must be a file),
// otherwise the first file matching Globs. When there is none, the error
// lists every place searched.
func (s CUDASearch) Find() (string, error) {
	if s.Explicit != "" {
		p, err := CheckPluginFile(s.Explicit)
		if err != nil {
			return "", fmt.Errorf("%s: %w", CUDAPluginEnv, err)
		}
		return p, nil
	}
	for _, g := range s.Globs {
		matches, err := filepath.Glob(g)
		if err != nil {
			continue // a malformed pattern from the environment matches nothing
		}
		slices.Sort(matches)
		for _, m := range matches {
			if isFile(m) {
				return m, nil
			}
		}
	}
	return "", fmt.Errorf("xla:cuda: no CUDA PJRT plugin found; %s is unset and nothing matches %s; "+
		`install JAX's CUDA plugin (pip install "jax[cuda12]"), set %s=/path/to/xla_cuda_plugin.so, `+
		"or pass xla:/path/to/xla_cuda_plugin.so",
		CUDAPluginEnv, strings.Join(s.Globs, ", "), CUDAPluginEnv)
}

// FindCUDAPlugin is DefaultCUDASearch().Find(): the path of the CUDA PJRT
// plugin "xla:cuda" opens.
func FindCUDAPlugin() (string, error) { return DefaultCUDASearch().Find() }

// CheckPluginFile checks that a PJRT plugin path names a file and returns
// it made absolute. It does not load it.
func CheckPluginFile(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("PJRT plugin %q: %w", path, err)
	}
	info, err := os.Stat(abs)
	switch {
	case os.IsNotExist(err):
		return "", fmt.Errorf("PJRT plugin %q: no such file (want the path of a PJRT plugin .so, "+
			"e.g. …/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so)", path)
	case err != nil:
		return "", fmt.Errorf("PJRT plugin %q: %w", path, err)
	case info.IsDir():
		return "", fmt.Errorf("PJRT plugin %q is a directory; want the plugin .so file in it", path)
	case !info.Mode().IsRegular():
		return "", fmt.Errorf("PJRT plugin %q is not a regular file", path)
	}
	return abs, nil
}

// IsJAXPluginPath reports whether a plugin lies where JAX's pip packages
// put it (…/site-packages/jax_plugins/xla_cuda*/xla_cuda_plugin.so), next
// to the nvidia/ packages holding the CUDA libraries it loads.
func IsJAXPluginPath(path string) bool {
	dir := filepath.Dir(path)
	ok, _ := filepath.Match("xla_cuda*", filepath.Base(dir))
	return ok && filepath.Base(filepath.Dir(dir)) == "jax_plugins"
}

// isFile reports whether p is (or links to) a regular file.
func isFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular()
}

// escapeGlob quotes filepath.Glob's special characters in a literal path.
func escapeGlob(p string) string {
	if filepath.Separator == '\\' { // no escaping on Windows; such paths are rare
		return p
	}
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
