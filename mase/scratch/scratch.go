// Package scratch makes the temporary work folders of a process, named by
// its pid, and removes those that processes no longer alive left behind (a
// command killed with SIGKILL, or by a SIGTERM while it trained, never runs
// its own clean-up).
package scratch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Dir makes a fresh folder in parent (os.TempDir() when "") named
// prefix, this process's pid, "-" and a random part, after removing the
// folders an earlier process left there under the same prefix (Sweep).
// The caller removes it when done.
func Dir(parent, prefix string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	Sweep(parent, prefix)
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("%s%d-", prefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("making a work folder in %s: %w", parent, err)
	}
	return dir, nil
}

// Sweep removes the folders directly in parent named prefix, a pid, "-"
// and more, whose pid is not this process's and no longer alive; it
// returns what it removed. Other names, files and links are left alone.
func Sweep(parent, prefix string) []string {
	es, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range es {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if !OwnerGone(strings.TrimPrefix(e.Name(), prefix)) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		if os.RemoveAll(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// OwnerGone reports whether tag, the part of a temporary file's or
// folder's name that begins with the pid of the process that made it
// ("PID-" and anything), names a process other than this one that is no
// longer alive: what it left may be removed. A tag without a pid is never
// gone.
func OwnerGone(tag string) bool {
	pidText, _, ok := strings.Cut(tag, "-")
	pid, err := strconv.Atoi(pidText)
	return ok && err == nil && pid > 0 && pid != os.Getpid() && !ProcessAlive(pid)
}
