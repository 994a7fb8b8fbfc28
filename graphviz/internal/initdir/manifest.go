package initdir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// A damaged compilation cache (a file cut short, a FIFO in it) makes
// go-graphviz's init panic in every program, until the folder is removed by
// hand. So after a start-up that worked, Restore records every file of the
// cache with its size and SHA-256 in a manifest beside it, and the next
// start-up checks the cache against it before go-graphviz reads a byte: a
// cache that does not match, or that has files and no manifest (a start-up
// that died half-way), is removed and compiled again (about a second).

// manifestName is the manifest's file, beside the cache folder.
const manifestName = "wazero.manifest.json"

// minFree is the free space the cache's file system must have for a
// start-up to use it (the cache is about 12 MB): below it go-graphviz
// would panic writing there, so a private temporary folder is used.
const minFree = 64 << 20

// cacheFile is one file of the cache, as the manifest records it.
type cacheFile struct {
	Path   string `json:"path"` // relative to the cache folder, slash-separated
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// manifestPath is the manifest of the cache folder dir.
func manifestPath(dir string) string { return filepath.Join(filepath.Dir(dir), manifestName) }

// listCache returns every file of dir with its size and SHA-256, in path
// order; anything but a regular file or a folder (a FIFO, a device, a
// symlink) is an error.
func listCache(dir string) ([]cacheFile, error) {
	var files []cacheFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		n, err := io.Copy(h, f)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files = append(files, cacheFile{Path: filepath.ToSlash(rel), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
		return nil
	})
	slices.SortFunc(files, func(a, b cacheFile) int { return strings.Compare(a.Path, b.Path) })
	return files, err
}

// checkCache reports why the cache folder dir cannot be trusted, or nil: it
// must be empty, or hold exactly the files its manifest records. matched
// is whether it held files and they matched.
func checkCache(dir string) (matched bool, err error) {
	files, err := listCache(dir)
	if err != nil {
		return false, err
	}
	if len(files) == 0 {
		return false, nil
	}
	b, err := os.ReadFile(manifestPath(dir))
	if err != nil {
		return false, fmt.Errorf("the cache has no manifest: %w", err)
	}
	var want []cacheFile
	if err := json.Unmarshal(b, &want); err != nil {
		return false, fmt.Errorf("the cache's manifest: %w", err)
	}
	if !slices.Equal(files, want) {
		return false, errors.New("the cache does not match its manifest")
	}
	return true, nil
}

// writeManifest records the cache folder dir as it is now, atomically
// (by hand: graphviz may import the standard library only, not
// internal/atomicfile).
func writeManifest(dir string) error {
	files, err := listCache(dir)
	if err != nil {
		return err
	}
	b, err := json.Marshal(files)
	if err != nil {
		return err
	}
	path := manifestPath(dir)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+manifestName+"-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// freeBytes is the space left to this user on the file system of dir.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// lockWait is how long a start-up waits for another one to finish with
// the cache before it goes on without the lock.
const lockWait = 30 * time.Second

// lockCache takes the exclusive lock of the cache folder dir's start-ups
// (a lock file beside it), so that no start-up empties or checks the cache
// while another one compiles into it; Restore releases it. It gives up
// after lockWait (a start-up that hangs) and returns nil then.
func lockCache(dir string) *os.File {
	f, err := os.OpenFile(filepath.Join(filepath.Dir(dir), "wazero.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil
	}
	for deadline := time.Now().Add(lockWait); ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}
