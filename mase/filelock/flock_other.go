//go:build !unix

package filelock

import (
	"fmt"
	"os"
	"runtime"
)

// Flock fails where flock(2) does not exist: nothing that needs mutual
// exclusion between processes runs without it.
func Flock(*os.File, bool) error {
	return fmt.Errorf("file locks need flock, which %s lacks", runtime.GOOS)
}

// Unlock does nothing where Flock cannot lock.
func Unlock(*os.File) error { return nil }
