//go:build !linux

package limits

// memAvailable is unknown outside Linux.
func memAvailable() (int64, bool) { return 0, false }

// memorySources: no bound is known outside Linux.
func memorySources() []Memory { return nil }
