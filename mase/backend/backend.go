// Package backend chooses the GoMLX compute backend gomase runs on.
//
// The default is the pure-Go backend ("go"), which works everywhere without
// downloads. GoMLX's own default ("xla") tries to download a PJRT CPU plugin
// and fails offline, so gomase never relies on it. GOMLX_BACKEND overrides
// the choice, as in GoMLX.
package backend

import (
	"fmt"
	"sync"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // registers the "go" backend
)

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
// GOMLX_BACKEND (default "go").
func Default() (compute.Backend, error) {
	once.Do(func() {
		shared, openErr = compute.New()
		if openErr != nil {
			openErr = fmt.Errorf("opening GoMLX backend (GOMLX_BACKEND; allowed here: \"go\"): %w", openErr)
		}
	})
	return shared, openErr
}
