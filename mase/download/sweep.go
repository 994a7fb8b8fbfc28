package download

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gomase/gomase/mase/scratch"
)

// IsTemp reports whether name is a temporary file name Save makes: a
// leading "." and Suffix. huggingface_hub's resumable partial blobs
// ("<etag>.incomplete", no leading dot) are not.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.HasSuffix(name, Suffix) && len(name) > 1+len(Suffix)
}

// Sweep removes the temporary files (IsTemp) directly in dir that were
// left by a process that was killed: those whose name carries the pid of
// no live process (".NAME.PID-RANDOM.incomplete", as Save names them), and
// any last written more than age ago (a live Save writes at least every
// stall timeout or gives up). It returns the paths it removed; a folder it
// cannot read is an error, a file it cannot remove is skipped.
func Sweep(dir string, age time.Duration) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	cutoff := time.Now().Add(-age)
	var removed []string
	for _, e := range es {
		if !e.Type().IsRegular() || !IsTemp(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil || (!info.ModTime().Before(cutoff) && !writerGone(e.Name())) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if os.Remove(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed, nil
}

// tempPattern is the os.CreateTemp pattern of Save's temporary file for
// base: the pid of this process, then CreateTemp's random part.
func tempPattern(base string) string {
	return fmt.Sprintf(".%s.%d-*%s", base, os.Getpid(), Suffix)
}

// writerGone reports whether a temporary file's name carries, after its
// last dot (".NAME.PID-RANDOM.incomplete"), the pid of a process other
// than this one that is no longer alive.
func writerGone(name string) bool {
	rest := strings.TrimSuffix(name, Suffix)
	return scratch.OwnerGone(rest[strings.LastIndexByte(rest, '.')+1:])
}

// live are the temporary files this process's Saves are writing.
var live sync.Map

// RemoveTemporaries removes the temporary files of the downloads this
// process is running: for a signal handler about to end the process,
// where the downloads' own clean-up would not run.
func RemoveTemporaries() {
	live.Range(func(path, _ any) bool {
		os.Remove(path.(string))
		return true
	})
}
