//go:build cgo && linux && (amd64 || arm64) && !noxla

package backend

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla" // registers the "xla" backend too

	"github.com/gomase/gomase/mase/backend/xlainit"
)

// XLAAvailable reports whether this binary includes GoMLX's XLA backend
// (go-xla, which loads PJRT plugins with dlopen through cgo). It is false
// in binaries built with CGO_ENABLED=0 (Go's default when no C compiler is
// found), with the noxla build tag, or for other platforms.
const XLAAvailable = true

const xlaMissing = ""

func init() {
	xlainit.Restore() // go-xla's initialisation has run: HOME as it was
	// go-xla would download PJRT plugins from GitHub or PyPI when a plugin
	// is named rather than given by path; gomase never downloads.
	xla.EnableAutoInstall(false)
}

// openXLA creates an XLA backend on the plugin at an absolute path, with
// go-xla's options (comma-separated, may be empty).
func openXLA(path, options string) (b compute.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("go-xla panicked while loading the plugin (is it a PJRT plugin?): %v", r)
		}
	}()
	config := path
	if options != "" {
		config += "," + options
	}
	var xb *xla.Backend
	quietly(func() { xb, err = xla.NewWithOptions(config, nil) })
	if err != nil {
		return nil, err // not xb: a nil *xla.Backend in a non-nil interface
	}
	return xb, nil
}
