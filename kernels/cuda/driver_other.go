//go:build !(cgo && linux)

package cuda

import (
	"fmt"
	"time"
)

// Driver is the CUDA driver; this build has none (it needs cgo on Linux).
type Driver struct{}

// OpenDriver reports that this build cannot open the CUDA driver.
func OpenDriver() (*Driver, error) {
	return nil, fmt.Errorf("cuda: this binary was built without cgo on Linux, so it cannot open the NVIDIA driver")
}

// Devices is never reached: OpenDriver fails.
func (dr *Driver) Devices() (int, error) { return 0, fmt.Errorf("cuda: no driver") }

// Context is a device's context (none in this build).
type Context struct{ Major, Minor int }

// Context is never reached: OpenDriver fails.
func (dr *Driver) Context(int) (*Context, error) { return nil, fmt.Errorf("cuda: no driver") }

// Close does nothing.
func (c *Context) Close() error { return nil }

// Module is a loaded kernel (none in this build).
type Module struct{}

// Buffer is device memory (none in this build).
type Buffer struct{ Bytes int }

// Load is never reached: OpenDriver fails.
func (c *Context) Load(Kernel) (*Module, error) { return nil, fmt.Errorf("cuda: no driver") }

// Alloc is never reached: OpenDriver fails.
func (c *Context) Alloc(int) (*Buffer, error) { return nil, fmt.Errorf("cuda: no driver") }

// Free does nothing.
func (b *Buffer) Free() error { return nil }

// CopyIn is never reached: OpenDriver fails.
func (b *Buffer) CopyIn([]byte) error { return fmt.Errorf("cuda: no driver") }

// CopyOut is never reached: OpenDriver fails.
func (b *Buffer) CopyOut([]byte) error { return fmt.Errorf("cuda: no driver") }

// Close does nothing.
func (m *Module) Close() error { return nil }

// DequantizeMXInt8 is never reached: OpenDriver fails.
func (m *Module) DequantizeMXInt8(_, _, _ *Buffer, _, _ int) error {
	return fmt.Errorf("cuda: no driver")
}

// TimeMXInt8 is never reached: OpenDriver fails.
func (m *Module) TimeMXInt8(_, _, _ *Buffer, _, _, _ int) (time.Duration, error) {
	return 0, fmt.Errorf("cuda: no driver")
}

// SDPA is never reached: OpenDriver fails.
func (m *Module) SDPA(SDPAConfig, *Buffer, *Buffer, *Buffer, *Buffer, *Buffer) error {
	return fmt.Errorf("cuda: no driver")
}

// TimeSDPA is never reached: OpenDriver fails.
func (m *Module) TimeSDPA(SDPAConfig, *Buffer, *Buffer, *Buffer, *Buffer, *Buffer, int) (time.Duration, error) {
	return 0, fmt.Errorf("cuda: no driver")
}
