package download

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// IsTemp reports whether name is a temporary file name Save makes: a
// leading "." and Suffix. huggingface_hub's resumable partial blobs
// ("<etag>.incomplete", no leading dot) are not.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.HasSuffix(name, Suffix) && len(name) > 1+len(Suffix)
}

// Sweep removes the temporary files (IsTemp) directly in dir that were
// last written more than age ago: a live Save writes at least every stall
// timeout or gives up, so such a file was left by a process that was
// killed. It returns the paths it removed; a folder it cannot read is an
// error, a file it cannot remove is skipped.
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
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if os.Remove(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed, nil
}
