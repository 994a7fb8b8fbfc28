// Package backend chooses the GoMLX compute backend gomase runs on.
//
// The default is the pure-Go backend ("go"), which works everywhere without
// downloads. GoMLX's own default ("xla") tries to download a PJRT CPU plugin
// and fails offline, so gomase never relies on it. GOMLX_BACKEND overrides
// the choice, as in GoMLX.
package backend

import (
	"fmt"
	"os"
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

// Default returns the process-wide backend, created on first use from
// GOMLX_BACKEND, or DefaultConfig when it is unset.
func Default() (compute.Backend, error) {
	once.Do(func() {
		config, set := os.LookupEnv(compute.ConfigEnvVar)
		if !set || config == "" || config == "go" {
			config = DefaultConfig
		}
		shared, openErr = newQuiet(config)
		if openErr != nil {
			openErr = fmt.Errorf("opening GoMLX backend %q (GOMLX_BACKEND; allowed here: go, go:<options>): %w", config, openErr)
		}
	})
	return shared, openErr
}

// newQuiet creates the backend with standard output silenced: the Go
// backend prints a line when its parallelism is configured, which would
// corrupt JSON written by the CLI.
func newQuiet(config string) (compute.Backend, error) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return compute.NewWithConfig(config)
	}
	defer devnull.Close()
	saved := os.Stdout
	os.Stdout = devnull
	defer func() { os.Stdout = saved }()
	return compute.NewWithConfig(config)
}
