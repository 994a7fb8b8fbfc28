package backend

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Allowed lists the backend specifications Open accepts; error messages
// quote it.
const Allowed = "go, go:<options>, xla:cuda, xla:/path/to/pjrt_plugin.so (xla forms take ,<plugin options>)"

// Spec is a parsed backend specification (the --backend flag of the mase
// CLI, or GOMLX_BACKEND). The forms are:
//
//	go                       the pure-Go backend with DefaultConfig ("go:" too)
//	go:<options>             the pure-Go backend with GoMLX's own options
//	                         (e.g. go:ops_sequential, go:parallelism=4)
//	xla:cuda                 XLA with a CUDA PJRT plugin, found by FindCUDAPlugin
//	xla:<path to plugin.so>  XLA with the PJRT plugin in that file
//
// An xla form may end with ",<options>" for the XLA backend, passed through
// to go-xla unchanged (e.g. xla:cuda,memory_fraction=0.5,preallocate).
// "xla:cpu" is refused: go-xla downloads its CPU plugin, and gomase never
// downloads; a CPU plugin already on disk can be named by its path.
type Spec struct {
	// Backend is "go" or "xla".
	Backend string
	// Options are the Go backend's options ("" for DefaultConfig).
	Options string
	// Plugin is, for xla, "cuda" or a plugin file path (as given; Open
	// makes it absolute).
	Plugin string
	// PluginOptions are the xla options after the first comma, or "".
	PluginOptions string
}

// PluginCUDA is Spec.Plugin for "xla:cuda".
const PluginCUDA = "cuda"

// String returns the specification in the form ParseSpec reads.
func (s Spec) String() string {
	switch s.Backend {
	case "go":
		if s.Options == "" {
			return "go"
		}
		return "go:" + s.Options
	case "xla":
		if s.PluginOptions == "" {
			return "xla:" + s.Plugin
		}
		return "xla:" + s.Plugin + "," + s.PluginOptions
	}
	return s.Backend
}

// IsPath reports whether the xla plugin is given by a file path.
func (s Spec) IsPath() bool { return s.Backend == "xla" && s.Plugin != PluginCUDA }

// ParseSpec parses a backend specification (see Spec). It only checks the
// syntax: whether a plugin file exists is Open's business.
func ParseSpec(spec string) (Spec, error) {
	spec = strings.TrimSpace(spec)
	bad := func(why string) (Spec, error) {
		return Spec{}, fmt.Errorf("backend %q: %s (allowed: %s)", spec, why, Allowed)
	}
	name, rest, _ := strings.Cut(spec, ":")
	switch name {
	case "go":
		// "go:" (no options) is "go".
		return Spec{Backend: "go", Options: rest}, nil
	case "xla":
		plugin, opts, _ := strings.Cut(rest, ",")
		switch {
		case plugin == "":
			return bad("xla needs a plugin: xla:cuda or xla:<path to the PJRT plugin .so>")
		case plugin == PluginCUDA:
			return Spec{Backend: "xla", Plugin: PluginCUDA, PluginOptions: opts}, nil
		case plugin == "cpu":
			return bad("xla:cpu is not offered: go-xla downloads its CPU plugin and gomase never downloads; " +
				"name a PJRT CPU plugin already on disk by its path, or use go")
		case looksLikePath(plugin):
			return Spec{Backend: "xla", Plugin: plugin, PluginOptions: opts}, nil
		default:
			return bad(fmt.Sprintf("unknown xla plugin %q: want cuda or a path to a plugin .so file", plugin))
		}
	case "":
		return bad("empty backend")
	default:
		return bad(fmt.Sprintf("unknown backend %q", name))
	}
}

// looksLikePath reports whether an xla plugin name is a file path: it has
// a path separator or a shared-library suffix.
func looksLikePath(p string) bool {
	if strings.ContainsRune(p, '/') || strings.ContainsRune(p, filepath.Separator) {
		return true
	}
	for _, ext := range []string{".so", ".dylib", ".dll"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}
