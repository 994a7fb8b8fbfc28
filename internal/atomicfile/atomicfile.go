// Package atomicfile writes files atomically: each file goes to a
// temporary file in its target directory, is fsynced, and is renamed into
// place, so a failed write leaves any previous file unchanged.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/scratch"
)

// File is a file's final path and content.
type File struct {
	Path string
	Data []byte
}

// FailHook, when set (by tests), is called before each step of a write
// ("write", "sync", "rename") with the final path; an error it returns
// aborts the write at that step. For "write", half the data has been
// written when it is called, as after a full disk.
var FailHook func(step, path string) error

func hook(step, path string) error {
	if FailHook == nil {
		return nil
	}
	return FailHook(step, path)
}

// Write writes every file to a temporary file beside its final path,
// syncs them all, then renames them into place in order. Until the first
// rename nothing at the final paths changes; on any error the temporary
// files are removed. Files are written with mode 0644.
func Write(files ...File) (err error) {
	temps := make([]string, len(files))
	defer func() {
		if err != nil {
			for _, t := range temps {
				if t != "" {
					os.Remove(t)
				}
			}
		}
	}()
	for i, f := range files {
		if fi, statErr := os.Stat(f.Path); statErr == nil && fi.IsDir() {
			return fmt.Errorf("cannot write %s: it is a directory (give a file path)", f.Path)
		}
		dir := filepath.Dir(f.Path)
		if fi, statErr := os.Stat(dir); statErr != nil || !fi.IsDir() {
			return fmt.Errorf("cannot write %s: directory %s does not exist", f.Path, dir)
		}
		sweep(f.Path)
		tmp, cerr := os.CreateTemp(dir, fmt.Sprintf(".%s.tmp-%d-*", filepath.Base(f.Path), os.Getpid()))
		if cerr != nil {
			return fmt.Errorf("cannot write %s: creating a temporary file in %s: %w", f.Path, dir, cerr)
		}
		temps[i] = tmp.Name()
		if werr := writeSynced(tmp, f); werr != nil {
			tmp.Close()
			return fmt.Errorf("writing %s: %w (the previous file, if any, is unchanged)", f.Path, werr)
		}
		if cerr := tmp.Close(); cerr != nil {
			return fmt.Errorf("writing %s: closing the temporary file: %w (the previous file, if any, is unchanged)", f.Path, cerr)
		}
		if cerr := os.Chmod(tmp.Name(), 0o644); cerr != nil {
			return fmt.Errorf("writing %s: %w", f.Path, cerr)
		}
	}
	for i, f := range files {
		if rerr := hook("rename", f.Path); rerr != nil {
			return fmt.Errorf("renaming into %s: %w", f.Path, rerr)
		}
		if rerr := os.Rename(temps[i], f.Path); rerr != nil {
			return fmt.Errorf("renaming the temporary file into %s: %w", f.Path, rerr)
		}
		temps[i] = ""
	}
	syncDirs(files)
	return nil
}

// writeSynced writes f's data to tmp and flushes it to stable storage.
func writeSynced(tmp *os.File, f File) error {
	half := len(f.Data) / 2
	if _, err := tmp.Write(f.Data[:half]); err != nil {
		return err
	}
	if err := hook("write", f.Path); err != nil {
		return err
	}
	if _, err := tmp.Write(f.Data[half:]); err != nil {
		return err
	}
	if err := hook("sync", f.Path); err != nil {
		return err
	}
	return tmp.Sync()
}

// syncDirs fsyncs the directories holding the files so the renames are
// durable. Failures are ignored: some systems cannot sync a directory, and
// the files themselves are already complete.
func syncDirs(files []File) {
	done := map[string]bool{}
	for _, f := range files {
		dir := filepath.Dir(f.Path)
		if done[dir] {
			continue
		}
		done[dir] = true
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync() // best effort
			d.Close()
		}
	}
}

// CanWrite reports, by making and removing a temporary file in it, whether
// the folder dir takes new files: the check of an output path before long
// work. The error is the system's reason (permission denied, a read-only
// file system, no space), for the caller's message.
func CanWrite(dir string) error {
	probe, err := os.CreateTemp(dir, ".mase-write-check-*")
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			return inner
		}
		return err
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// staleAfter is the age of a temporary file that no write is using any
// more: a write keeps its temporary file's modification time fresh while
// it writes, so an older one was left by a process that was killed.
const staleAfter = 10 * time.Minute

// sweep removes the temporary files of earlier writes to path that were
// killed before they could remove them: at once when the name's pid
// (".NAME.tmp-PID-RANDOM") is of no live process, else once stale.
func sweep(path string) {
	prefix := "." + filepath.Base(path) + ".tmp-"
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(prefix)+"*"))
	for _, t := range left {
		info, err := os.Lstat(t)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if scratch.OwnerGone(strings.TrimPrefix(filepath.Base(t), prefix)) || time.Since(info.ModTime()) > staleAfter {
			os.Remove(t)
		}
	}
}

// globEscape escapes the characters filepath.Match treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
