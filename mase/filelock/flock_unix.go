//go:build unix

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// flock waits for an exclusive or shared flock on f, retrying on EINTR.
func flock(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
