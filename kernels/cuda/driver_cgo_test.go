//go:build cgo && linux

package cuda

import (
	"strings"
	"testing"
)

// TestOpenLibraryErrors checks the errors of a library that is not there
// and of one that is not the CUDA driver.
func TestOpenLibraryErrors(t *testing.T) {
	_, err := openLibrary("libgomase-no-such-driver.so.1")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "libgomase-no-such-driver.so.1") || !strings.Contains(err.Error(), "NVIDIA driver") {
		t.Errorf("missing library: %v", err)
	}
	_, err = openLibrary("libc.so.6")
	if err == nil || !strings.Contains(err.Error(), "libc.so.6 lacks cuInit") {
		t.Errorf("a library that is not the driver: %v", err)
	}
}
