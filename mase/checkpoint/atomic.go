package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
)

// pendingFile is a file's final path and content.
type pendingFile struct {
	path string
	data []byte
}

// failHook, when set (by tests), is called before each step of an atomic
// write ("write", "sync", "rename") with the final path; an error it
// returns aborts the write at that step. For "write", half the data has
// been written when it is called, as after a full disk.
var failHook func(step, path string) error

func hook(step, path string) error {
	if failHook == nil {
		return nil
	}
	return failHook(step, path)
}

// writeFilesAtomic writes every file to a temporary file beside its final
// path, syncs them all, then renames them into place in order. Until the
// first rename nothing at the final paths changes; on any error the
// temporary files are removed.
func writeFilesAtomic(files []pendingFile) (err error) {
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
		if fi, statErr := os.Stat(f.path); statErr == nil && fi.IsDir() {
			return fmt.Errorf("cannot write %s: it is a directory (give a file path)", f.path)
		}
		dir := filepath.Dir(f.path)
		if fi, statErr := os.Stat(dir); statErr != nil || !fi.IsDir() {
			return fmt.Errorf("cannot write %s: directory %s does not exist", f.path, dir)
		}
		tmp, cerr := os.CreateTemp(dir, "."+filepath.Base(f.path)+".tmp-*")
		if cerr != nil {
			return fmt.Errorf("cannot write %s: creating a temporary file in %s: %w", f.path, dir, cerr)
		}
		temps[i] = tmp.Name()
		if werr := writeSynced(tmp, f); werr != nil {
			tmp.Close()
			return fmt.Errorf("writing %s: %w (the previous file, if any, is unchanged)", f.path, werr)
		}
		if cerr := tmp.Close(); cerr != nil {
			return fmt.Errorf("writing %s: closing the temporary file: %w (the previous file, if any, is unchanged)", f.path, cerr)
		}
		if cerr := os.Chmod(tmp.Name(), 0o644); cerr != nil {
			return fmt.Errorf("writing %s: %w", f.path, cerr)
		}
	}
	for i, f := range files {
		if rerr := hook("rename", f.path); rerr != nil {
			return fmt.Errorf("renaming into %s: %w", f.path, rerr)
		}
		if rerr := os.Rename(temps[i], f.path); rerr != nil {
			return fmt.Errorf("renaming the temporary file into %s: %w", f.path, rerr)
		}
		temps[i] = ""
	}
	syncDirs(files)
	return nil
}

// writeSynced writes f's data to tmp and flushes it to stable storage.
func writeSynced(tmp *os.File, f pendingFile) error {
	half := len(f.data) / 2
	if _, err := tmp.Write(f.data[:half]); err != nil {
		return err
	}
	if err := hook("write", f.path); err != nil {
		return err
	}
	if _, err := tmp.Write(f.data[half:]); err != nil {
		return err
	}
	if err := hook("sync", f.path); err != nil {
		return err
	}
	return tmp.Sync()
}

// syncDirs fsyncs the directories holding the files so the renames are
// durable. Failures are ignored: some systems cannot sync a directory, and
// the files themselves are already complete.
func syncDirs(files []pendingFile) {
	done := map[string]bool{}
	for _, f := range files {
		dir := filepath.Dir(f.path)
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
