// Package backend chooses the GoMLX compute backend gomase runs on.
//
// The default is the pure-Go backend ("go"), which works everywhere without
// downloads. GoMLX's own default ("xla") tries to download a PJRT CPU plugin
// and fails offline, so gomase never relies on it. GOMLX_BACKEND overrides
// the choice, as in GoMLX, with the specifications Open accepts: "go",
// "go:<options>", "xla:cuda" (a CUDA PJRT plugin found on disk, e.g. the
// one inside JAX's CUDA plugin package; see FindCUDAPlugin) or
// "xla:/path/to/plugin.so". Open creates a backend from such a
// specification; ParseSpec and CUDASearch are its pure parts. The XLA
// backend is in binaries built with cgo on linux/amd64 or linux/arm64
// (XLAAvailable); docs/GPU.md tells how to run gomase on a GPU.
package backend

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // registers the "go" backend
)

// DefaultConfig is the backend configuration used when GOMLX_BACKEND is
// not set: the Go backend with an unbounded worker pool. compute v0.1.2's
// bounded pool (2 × GOMAXPROCS workers) can deadlock when ops that run in
// parallel also fan out inside (seen on 2-core machines: a training step
// that never returns, every goroutine in sync.Cond.Wait); unbounded, the
// pool never blocks and the speed is the same (docs/BENCHMARKS.md).
const DefaultConfig = "go:parallelism=-1"

func init() {
	// GoMLX defaults to "xla", which downloads a plugin; ours is "go".
	compute.DefaultConfig = "go"
}

var (
	once    sync.Once
	shared  compute.Backend
	openErr error
)

// Default returns the process-wide backend, created on first use by Open
// from GOMLX_BACKEND, or from "go" (DefaultConfig) when it is unset or
// empty.
func Default() (compute.Backend, error) {
	once.Do(func() {
		spec := DefaultSpec()
		shared, openErr = Open(spec)
		if openErr != nil {
			openErr = fmt.Errorf("%s=%q: %w", compute.ConfigEnvVar, spec, openErr)
		}
	})
	return shared, openErr
}

// DefaultSpec is the specification Default opens: GOMLX_BACKEND, or "go"
// when it is unset or empty.
func DefaultSpec() string {
	if spec := os.Getenv(compute.ConfigEnvVar); spec != "" {
		return spec
	}
	return "go"
}

// newQuiet creates a backend from a GoMLX configuration with standard
// output silenced (see quietly).
func newQuiet(config string) (b compute.Backend, err error) {
	quietly(func() { b, err = compute.NewWithConfig(config) })
	return b, err
}

// quietly runs fn with os.Stdout pointing at /dev/null: the Go backend
// prints a line when its parallelism is configured, which would corrupt
// JSON written by the CLI.
func quietly(fn func()) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fn()
		return
	}
	defer devnull.Close()
	saved := os.Stdout
	os.Stdout = devnull
	defer func() { os.Stdout = saved }()
	fn()
}

// IsGo reports whether be is GoMLX's pure-Go backend (counted or not).
func IsGo(be compute.Backend) bool { return IsGoName(be.Name()) }

// IsGoName reports whether a backend name, as Backend.Name gives it, is
// the Go backend's ("Go Backend" in compute v0.1.2).
func IsGoName(name string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(name), " ")
	return strings.EqualFold(first, "go")
}
