//go:build unix

package initdir

import (
	"io/fs"
	"os"
	"syscall"
)

// owned reports whether this process's user owns the file.
func owned(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
