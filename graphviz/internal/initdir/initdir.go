// Package initdir points go-graphviz's package initialisation at folders of
// this user's own, and puts the environment back afterwards.
//
// go-graphviz (v0.2.x) starts its WebAssembly Graphviz in an init() of its
// internal/wasm package, so it runs in every binary that links it, drawing or
// not, and it panics on any error. That init reads one setting, os.TempDir():
// it keeps wazero's compilation cache in $TMPDIR/go-graphviz (wazero makes
// the version folder in it mode 0700, so a second user's init panics opening
// the first user's files) and mounts a fresh $TMPDIR/graphvizNNN as
// Graphviz's file system, never removed.
//
// This package's init sets TMPDIR to a fresh folder of this process inside
// the user's cache folder (os.UserCacheDir()/gomase/graphviz), in which
// go-graphviz's entry is a link to the user's compilation cache (wazero/
// beside it); Restore, called from package graphviz's init, which runs after
// go-graphviz's, puts TMPDIR back and removes the folder. Where the user's
// cache folder cannot be used (no home, not ours), a private temporary folder
// takes its place and is removed whole: nothing is kept then.
//
// The order is the language's: packages are initialised in import-path order,
// each as soon as its imports are (the spec's "Package initialization", Go
// 1.21 on). This package imports only standard packages that wazero imports
// too, and its path sorts before github.com/tetratelabs/wazero, which
// go-graphviz's internal/wasm imports, so its init runs first. The graphviz
// package's tests check it.
package initdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

const env = "TMPDIR"

var (
	run    string // the folder TMPDIR names during go-graphviz's init; "" when none
	cache  string // the per-user compilation cache; "" when none is kept
	setErr error  // why the per-user cache, or any folder, could not be prepared
	oldTMP string
	hadTMP bool
	// verified is whether the cache matched its manifest at start-up.
	verified bool
	// lock is the start-ups' lock of the cache, held until Restore.
	lock *os.File
)

func init() {
	oldTMP, hadTMP = os.LookupEnv(env)
	run, cache, setErr = prepare()
	if run != "" {
		if err := os.Setenv(env, run); err != nil {
			_ = os.RemoveAll(run)
			run, cache, setErr = "", "", errors.Join(setErr, err)
		}
	}
	if cache == "" && lock != nil { // the cache is not used: nothing to guard
		_ = lock.Close()
		lock = nil
	}
}

// prepare makes the folder for TMPDIR: in the user's cache folder, with the
// go-graphviz link to the compilation cache (checked against its manifest,
// and emptied when damaged), or else a private temporary one.
func prepare() (dir, kept string, err error) {
	kept, err = userCache()
	if err == nil {
		lock = lockCache(kept)
		var bad error
		verified, bad = checkCache(kept)
		if bad != nil {
			// Compiled again by this start-up; nothing of the old one is read.
			if err = errors.Join(os.RemoveAll(kept), os.Remove(manifestPath(kept))); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
			if err == nil {
				kept, err = userCache()
			}
		}
	}
	if err == nil {
		if free, ferr := freeBytes(kept); ferr != nil || free < minFree {
			err = errors.Join(ferr, fmt.Errorf("%s has %d bytes free, less than the %d the compilation cache needs", kept, free, minFree))
		}
	}
	if err == nil {
		sweep(filepath.Dir(kept))
		dir, err = os.MkdirTemp(filepath.Dir(kept), "init-")
		if err == nil {
			if err = os.Symlink(kept, filepath.Join(dir, "go-graphviz")); err == nil {
				return dir, kept, nil
			}
			_ = os.RemoveAll(dir)
		}
	}
	// A private folder: in TMPDIR, or where TMPDIR cannot be used, in the
	// system's temporary folders.
	var errs []error
	for _, parent := range []string{"", "/tmp", "/var/tmp", "/dev/shm"} {
		d, err2 := os.MkdirTemp(parent, "gomase-graphviz-")
		if err2 == nil {
			return d, "", err
		}
		errs = append(errs, err2)
	}
	return "", "", errors.Join(append([]error{err}, errs...)...)
}

// staleAfter is the age of an init- folder that no process uses any more:
// a process keeps its folder only through go-graphviz's start-up (well
// under a second), so an older one was left by a process that was killed.
const staleAfter = time.Hour

// sweep removes the init- folders in parent left by killed processes.
func sweep(parent string) {
	old, _ := filepath.Glob(filepath.Join(parent, "init-*"))
	for _, dir := range old {
		if info, err := os.Lstat(dir); err == nil && info.IsDir() && time.Since(info.ModTime()) > staleAfter {
			_ = os.RemoveAll(dir)
		}
	}
}

// userCache makes (or checks) the compilation cache folder in the user's
// cache folder: it and everything in it must be this user's.
func userCache() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, "gomase", "graphviz", "wazero")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !owned(info) {
			return &fs.PathError{Op: "use", Path: path, Err: fs.ErrPermission}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return dir, nil
}

// Restore puts TMPDIR back as it was and removes the folder it named during
// go-graphviz's init (the compilation cache stays). Package graphviz calls it
// from its init; later calls do nothing.
func Restore() error {
	if run == "" {
		return nil
	}
	var err error
	if hadTMP {
		err = os.Setenv(env, oldTMP)
	} else {
		err = os.Unsetenv(env)
	}
	err = errors.Join(err, os.RemoveAll(run))
	run = ""
	if cache != "" && !verified {
		// go-graphviz started from this cache, new or rebuilt: record it for
		// the next start-up (a verified one is as its manifest says).
		err = errors.Join(err, writeManifest(cache))
	}
	if lock != nil {
		err = errors.Join(err, lock.Close()) // closing releases the lock
		lock = nil
	}
	return err
}

// CacheDir returns the folder that keeps go-graphviz's compiled WebAssembly
// for this user, or "" when this process keeps none.
func CacheDir() string { return cache }

// Err returns why the per-user cache, or any private folder, could not be
// prepared; nil when the cache is in use.
func Err() error { return setErr }
