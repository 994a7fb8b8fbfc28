package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// RunEnv is set, in the environment of every process a labs run starts
// (the driver, the kernel, gopls, the cells' programs), to the run's work
// folder: by it the run, or the next one, finds and ends them all.
const RunEnv = "GOMASE_LABS_RUN"

// workDirPrefix names the work folders in the temporary directory:
// gomase-labs-run-NNN holds a run's driver, its executed notebook and its
// children's TMPDIR (GoNB's folders, the kernel's connection file);
// gomase-labs-run-NNN.lock beside it is locked (flock) by the run while it
// lives. A folder whose lock nobody holds was left by a run that was killed.
const workDirPrefix = "gomase-labs-run-"

// stopGrace is how long a run's processes have, after SIGTERM, to exit
// before they are killed.
const stopGrace = 3 * time.Second

// workDir is one run's work folder, locked while the run lives.
type workDir struct {
	// Path is the folder.
	Path string
	lock *os.File
}

// newWorkDir creates a locked work folder in the temporary directory.
func newWorkDir() (*workDir, error) {
	var err error
	for try := 0; try < 3; try++ {
		var w *workDir
		if w, err = tryWorkDir(); w != nil || err != nil {
			return w, err
		}
	}
	return nil, fmt.Errorf("cannot create a work folder in %s (TMPDIR): its lock file was removed three times as it was made", os.TempDir())
}

// tryWorkDir makes the lock file, locks it and makes the folder; it
// returns nil and no error when a sweep removed the lock file before it was
// locked (try again).
func tryWorkDir() (*workDir, error) {
	lock, err := os.CreateTemp("", workDirPrefix+"*.lock")
	if err != nil {
		return nil, fmt.Errorf("cannot create a work folder in %s (TMPDIR): %w", os.TempDir(), err)
	}
	fail := func(err error) (*workDir, error) {
		lock.Close()
		os.Remove(lock.Name())
		if err == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot create a work folder in %s (TMPDIR): %w", os.TempDir(), err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(err)
	}
	// A sweep may have taken the new, unlocked file for a dead run's and
	// removed it: then the lock is on a file nobody else can find.
	opened, err1 := lock.Stat()
	named, err2 := os.Stat(lock.Name())
	if err1 != nil || err2 != nil || !os.SameFile(opened, named) {
		return fail(nil)
	}
	// For whoever looks: which process owns the folder.
	if _, err := fmt.Fprintf(lock, "mase labs, pid %d\n", os.Getpid()); err != nil {
		return fail(err)
	}
	path := strings.TrimSuffix(lock.Name(), ".lock")
	if err := os.Mkdir(path, 0o700); err != nil {
		return fail(err)
	}
	return &workDir{Path: path, lock: lock}, nil
}

// Close ends every process still marked with the folder, removes the
// folder, then its lock file. It returns the pids that would not die.
func (w *workDir) Close() []int {
	left := endMarked(w.Path)
	os.RemoveAll(w.Path)
	os.Remove(w.lock.Name())
	w.lock.Close()
	return left
}

// endMarked stops the processes marked with dir (RunEnv), a few rounds in
// case one starts another while it is stopped, and returns those left.
func endMarked(dir string) []int {
	var left []int
	for round := 0; round < 3; round++ {
		pids := MarkedProcesses(RunEnv, dir)
		if len(pids) == 0 {
			return nil
		}
		left = StopProcesses(pids, stopGrace)
	}
	return left
}

// Leftovers is what SweepLeftovers ended: the work folders of killed runs
// and the processes that still ran in them.
type Leftovers struct {
	Folders, Processes int
	// Alive are pids that would not die.
	Alive []int
}

// SweepLeftovers ends what runs killed outright (SIGKILL, a crash) left in
// the temporary directory: for each work folder whose lock nobody holds,
// the processes marked with it (a kernel, gopls, a cell still running) are
// stopped and the folder and its lock file removed. Folders of live runs,
// and anything not named and locked as a work folder, are left alone.
func SweepLeftovers() Leftovers {
	var swept Leftovers
	locks, _ := filepath.Glob(filepath.Join(os.TempDir(), workDirPrefix+"*.lock"))
	for _, lockPath := range locks {
		if st, err := os.Lstat(lockPath); err != nil || !st.Mode().IsRegular() {
			continue
		}
		f, err := os.OpenFile(lockPath, os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close() // its run is alive (or the lock cannot be judged)
			continue
		}
		dir := strings.TrimSuffix(lockPath, ".lock")
		pids := MarkedProcesses(RunEnv, dir)
		swept.Processes += len(pids)
		if len(pids) > 0 {
			swept.Alive = append(swept.Alive, StopProcesses(pids, stopGrace)...)
		}
		if st, err := os.Lstat(dir); err == nil && st.IsDir() {
			if err := os.RemoveAll(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				swept.Folders++
			}
		}
		os.Remove(lockPath)
		f.Close()
	}
	return swept
}

// String says what was swept, in one line ("" when nothing was).
func (l Leftovers) String() string {
	if l.Folders == 0 && l.Processes == 0 {
		return ""
	}
	s := fmt.Sprintf("removed %d work folder(s) in %s left by mase labs runs that were killed", l.Folders, os.TempDir())
	if l.Processes > 0 {
		s += fmt.Sprintf(", and ended the %d process(es) of theirs still running (a kernel, gopls, a cell's program)", l.Processes)
	}
	if len(l.Alive) > 0 {
		s += fmt.Sprintf("; pids %v would not die", l.Alive)
	}
	return s
}
