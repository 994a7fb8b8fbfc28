//go:build unix

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// Flock waits for an exclusive or shared whole-file flock on the open
// file f, retrying on EINTR. The lock belongs to the open file: two opens
// of one file conflict even in one process.
func Flock(f *os.File, exclusive bool) error {
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

// Unlock releases f's flock.
func Unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
