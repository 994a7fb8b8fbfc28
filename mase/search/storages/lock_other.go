//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package storages

import (
	"fmt"
	"os"
	"runtime"
)

func flock(*os.File, bool) error {
	return fmt.Errorf("journal storage needs flock, which %s lacks; use InMemoryStorage", runtime.GOOS)
}

func funlock(*os.File) error { return nil }

func processExists(int) bool { return true }
