package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gomase/gomase/internal/atomicfile"
)

// ownedPrefix is how much of an existing file CheckOutput reads to tell
// whether Export wrote it: the graph file's format line, the parameters
// file's header metadata ("gomase.model"), both at the start.
const ownedPrefix = 64 << 10

// CheckOutput checks, before any work, that Export can write the
// checkpoint at base (Paths names the two files): their folder exists and
// takes new files, neither path is a folder or a special file, and a file
// already there is one Export wrote (a MaseGraph graph file; a parameters
// file whose header says gomase wrote it) — Export never replaces a file
// that is not a checkpoint's, such as a model.safetensors downloaded from
// the hub. Export calls it; commands call it before they train.
func CheckOutput(base string) error {
	stPath, jsonPath, err := Paths(base)
	if err != nil {
		return err
	}
	for _, f := range []struct{ path, mark, what string }{
		{jsonPath, `"format": "` + graphFormat + `"`, "a MaseGraph graph file"},
		{stPath, `"gomase.model":`, "a parameters file gomase wrote"},
	} {
		info, err := os.Stat(f.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", f.path, err)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("checkpoint %s is a folder or special file (allowed: a file name for the checkpoint)", f.path)
		}
		if !startsWithMark(f.path, f.mark) {
			return fmt.Errorf("checkpoint %s exists and is not %s: refusing to overwrite it (allowed: a new name, or a checkpoint Export wrote)", f.path, f.what)
		}
	}
	dir := filepath.Dir(jsonPath)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fmt.Errorf("checkpoint %s: no folder %s to write it in (create it first)", jsonPath, dir)
	}
	if err := atomicfile.CanWrite(dir); err != nil {
		return fmt.Errorf("checkpoint %s: cannot write in %s: %v", jsonPath, dir, err)
	}
	return nil
}

// startsWithMark reports whether the first ownedPrefix bytes of the file
// at path contain mark.
func startsWithMark(path, mark string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head, err := io.ReadAll(io.LimitReader(f, ownedPrefix))
	return err == nil && bytes.Contains(head, []byte(mark))
}
