// Package filelock takes advisory whole-file locks (flock(2)) on lock
// files, so that processes sharing a folder (two `mase sim` on one design)
// take turns where they would otherwise overwrite each other's files.
package filelock

import (
	"fmt"
	"os"
)

// Lock is a held lock on an open lock file.
type Lock struct {
	f    *os.File
	path string
}

// Acquire opens (creating it if missing) the lock file at path and waits
// for an exclusive lock on it, or a shared one when exclusive is false.
// The lock belongs to the open file: two Acquire calls conflict even in
// one process. Release it with Release.
func Acquire(path string, exclusive bool) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file %s: %w", path, err)
	}
	if err := Flock(f, exclusive); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return &Lock{f: f, path: path}, nil
}

// Share turns an exclusive lock into a shared one (others may then take
// shared locks, not exclusive ones).
func (l *Lock) Share() error {
	if err := Flock(l.f, false); err != nil {
		return fmt.Errorf("locking %s: %w", l.path, err)
	}
	return nil
}

// Release unlocks and closes the lock file (which stays in place).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the lock
	l.f = nil
	return err
}
