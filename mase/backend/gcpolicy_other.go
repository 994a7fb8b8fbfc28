//go:build !linux

package backend

// totalMemory is the machine's memory in bytes: unknown here, so TuneGC
// sets no memory limit.
func totalMemory() uint64 { return 0 }
