//go:build unix

package scratch

import (
	"errors"
	"syscall"
)

// ProcessAlive reports whether a process with this pid exists (EPERM: it
// does, under another user).
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
