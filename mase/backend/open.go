package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomlx/compute"
)

// Open creates a new backend from a specification (see Spec and Allowed):
//
//	Open("go")                  // the Go backend, DefaultConfig
//	Open("go:ops_sequential")   // the Go backend with GoMLX options
//	Open("xla:cuda")            // XLA on the CUDA plugin FindCUDAPlugin finds
//	Open("xla:/opt/pjrt/x.so")  // XLA on that PJRT plugin file
//
// Every call creates a new backend, owned by the caller; Default is the
// shared one. The backend counts its live buffers (see Counted). Open never downloads anything: go-xla's plugin auto-install
// is switched off and the plugin is always given to it by absolute path.
// The XLA backend needs a binary built with cgo on linux/amd64 or
// linux/arm64 (see XLAAvailable); elsewhere the xla forms fail with an
// error saying so. Errors name the specification, what was wrong and the
// allowed forms; a panic inside go-xla while loading a plugin comes back
// as an error (a plugin that crashes in C code still ends the process).
func Open(spec string) (compute.Backend, error) {
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return OpenSpec(s)
}

// OpenSpec is Open for a parsed specification.
func OpenSpec(s Spec) (compute.Backend, error) {
	b, err := openSpec(s)
	if err != nil {
		return nil, err
	}
	return Counted(b), nil
}

func openSpec(s Spec) (compute.Backend, error) {
	switch s.Backend {
	case "go":
		config := DefaultConfig
		if s.Options != "" {
			config = "go:" + s.Options
		}
		b, err := newQuiet(config)
		if err != nil {
			return nil, fmt.Errorf("opening the Go backend %q: %w", config, err)
		}
		return b, nil
	case "xla":
		if !XLAAvailable {
			return nil, fmt.Errorf("backend %q: %s", s, xlaMissing)
		}
		var path string
		var err error
		if s.Plugin == PluginCUDA {
			path, err = FindCUDAPlugin()
		} else {
			path, err = CheckPluginFile(s.Plugin)
		}
		if err != nil {
			return nil, err
		}
		if IsJAXPluginPath(path) && os.Getenv("GOPJRT_CUDA_CHECKS") == "" {
			// go-xla looks for the CUDA libraries in ../nvidia next to the
			// plugin's directory and warns at length when they are not
			// there; JAX keeps them in site-packages/nvidia, which the
			// plugin finds by its own RPATH, so the warning is wrong here.
			os.Setenv("GOPJRT_CUDA_CHECKS", "0")
		}
		if s.Plugin == PluginCUDA || IsJAXPluginPath(path) {
			setGPUXLAFlags()
		}
		b, err := openXLA(path, s.PluginOptions)
		if err != nil {
			if s.IsPath() {
				return nil, fmt.Errorf("backend %q: %w", s, err)
			}
			return nil, fmt.Errorf("backend %q (plugin %s): %w", s, path, err)
		}
		if s.Plugin == PluginCUDA || strings.Contains(filepath.Base(path), "cuda") {
			b = withCUDAKernels(b, path)
		}
		return b, nil
	}
	return nil, fmt.Errorf("backend %q: unknown backend (allowed: %s)", s, Allowed)
}
