package hub

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomase/gomase/mase/limits"
)

// repoDir is <cache>/models--<org>--<name>, as in huggingface_hub.
func repoDir(cacheDir, id string) string {
	return filepath.Join(cacheDir, "models--"+strings.ReplaceAll(id, "/", "--"))
}

// isCommit reports whether rev is a full 40-hex commit hash (either case).
func isCommit(rev string) bool { return isLowerHex(strings.ToLower(rev), 40) }

// isLowerHex reports whether s is n lower-case hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// safeName reports whether s can be used as one path element in the cache.
func safeName(s string) bool {
	if s == "" || s[0] == '.' || len(s) > 255 {
		return false
	}
	for _, r := range s {
		if !isNameChar(r) {
			return false
		}
	}
	return true
}

// sanitize maps a revision to a single safe path element.
func sanitize(rev string) string {
	b := []byte(rev)
	for i, c := range b {
		if !isNameChar(rune(c)) {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || s[0] == '.' {
		s = "_" + s
	}
	return s
}

// lookup is the result of searching the cache for one file.
type lookup struct {
	path        string // the snapshot file, when present
	marker      bool   // a .no_exist marker says the file is absent
	markerPath  string
	snapshot    bool // the snapshot folder exists but lacks the file
	snapshotDir string
	why         string // why path is empty, for error messages
}

// lookupCache finds file at rev in a repo folder without network access.
func lookupCache(repo, rev, file string) lookup {
	var l lookup
	if _, err := os.Stat(repo); err != nil {
		l.why = "no " + filepath.Base(repo) + " folder"
		return l
	}
	commit := rev
	if !isCommit(rev) {
		ref := filepath.Join(repo, "refs", filepath.FromSlash(rev))
		b, err := limits.ReadFile(ref, limits.Small)
		if err != nil {
			// A snapshot named after the revision itself, as written
			// when the server sent no commit.
			commit = sanitize(rev)
			if st, err := os.Stat(filepath.Join(repo, "snapshots", commit)); err != nil || !st.IsDir() {
				l.why = "no refs/" + rev
				return l
			}
		} else {
			commit = strings.TrimSpace(string(b))
			if !safeName(commit) {
				l.why = fmt.Sprintf("refs/%s holds an invalid commit %q", rev, commit)
				return l
			}
		}
	}
	l.markerPath = filepath.Join(repo, ".no_exist", commit, filepath.FromSlash(file))
	if st, err := os.Stat(l.markerPath); err == nil && !st.IsDir() {
		l.marker = true
		l.why = "marked absent by " + l.markerPath
		return l
	}
	l.snapshotDir = filepath.Join(repo, "snapshots", commit)
	p := filepath.Join(l.snapshotDir, filepath.FromSlash(file))
	st, err := os.Stat(p)
	if err == nil && st.Mode().IsRegular() {
		l.path = p
		return l
	}
	if _, lerr := os.Lstat(p); lerr == nil {
		l.why = p + " is broken or not a file (its blob may be missing)"
		return l
	}
	if st, err := os.Stat(l.snapshotDir); err == nil && st.IsDir() {
		l.snapshot = true
		l.why = "snapshot " + commit + " lacks " + file
		return l
	}
	l.why = "no snapshots/" + commit
	return l
}

// randSuffix returns a random hex string for temporary names.
func randSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeFileAtomic writes data to path via a temporary file and rename.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// linkSnapshot makes link a relative symlink to blob, replacing any
// existing entry atomically. Where symlinks are unavailable it falls back
// to a hard link, then a copy.
func linkSnapshot(blob, link string) error {
	dir := filepath.Dir(link)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	target, err := filepath.Rel(dir, blob)
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		tmp := filepath.Join(dir, "."+filepath.Base(link)+"."+randSuffix()+".tmp")
		err := os.Symlink(target, tmp)
		if errors.Is(err, fs.ErrExist) && i < 5 {
			continue
		}
		if err != nil {
			return copyOrLink(blob, link)
		}
		if err := os.Rename(tmp, link); err != nil {
			os.Remove(tmp)
			return err
		}
		return nil
	}
}

func copyOrLink(blob, link string) error {
	dir := filepath.Dir(link)
	tmp := filepath.Join(dir, "."+filepath.Base(link)+"."+randSuffix()+".tmp")
	if err := os.Link(blob, tmp); err == nil {
		if err := os.Rename(tmp, link); err != nil {
			os.Remove(tmp)
			return err
		}
		return nil
	}
	src, err := os.Open(blob)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.CreateTemp(dir, "."+filepath.Base(link)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), link)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// writeMarker records that file is absent at commit, as transformers does
// with .no_exist/<commit>/<file>.
func writeMarker(repo, commit, file string) {
	p := filepath.Join(repo, ".no_exist", commit, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	if f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		f.Close()
	}
}

// writeRef points refs/<rev> at commit unless rev is itself a commit.
func writeRef(repo, rev, commit string) error {
	if isCommit(rev) {
		return nil
	}
	p := filepath.Join(repo, "refs", filepath.FromSlash(rev))
	if b, err := limits.ReadFile(p, limits.Small); err == nil && strings.TrimSpace(string(b)) == commit {
		return nil
	}
	return writeFileAtomic(p, []byte(commit))
}
