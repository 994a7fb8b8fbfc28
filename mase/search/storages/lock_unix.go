//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package storages

import (
	"errors"
	"os"
	"syscall"
)

// flock takes (exclusive) or shares a whole-file advisory lock on f, waiting
// for it; the lock belongs to the open file, so two opens conflict even in
// one process.
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

func funlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
