package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KernelProcesses lists the processes (other than this one) whose command
// line names a file in runtimeDir: the kernels a Jupyter front end (a
// notebook server, jupyter console) started with their connection files
// there (JUPYTER_RUNTIME_DIR).
func KernelProcesses(runtimeDir string) []int {
	mark := []byte(filepath.Clean(runtimeDir) + string(filepath.Separator))
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, p := range cmdlines {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(cmdline), string(mark)) && Alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// StopKernels stops the kernels of KernelProcesses(runtimeDir): SIGTERM
// first (GoNB then stops its gopls), up to grace for them to exit, then
// SIGKILL to each one left and to its process group when it leads one. It
// returns the pids still alive afterwards.
func StopKernels(runtimeDir string, grace time.Duration) []int {
	return StopProcesses(KernelProcesses(runtimeDir), grace)
}

// MarkedProcesses lists the processes (other than this one) whose
// environment holds name=value exactly: every process a labs run started,
// down to the cell's programs, carries RunEnv naming its work folder.
func MarkedProcesses(name, value string) []int {
	mark := []byte(name + "=" + value)
	environs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var pids []int
	for _, p := range environs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(p)
		if err != nil {
			continue // gone, or another user's
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, mark) {
				if Alive(pid) {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

// StopProcesses ends pids: SIGTERM first, up to grace for them to exit,
// then SIGKILL to each one left and to its process group when it leads
// one. It returns the pids still alive afterwards.
func StopProcesses(pids []int, grace time.Duration) []int {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	var left []int
	for _, pid := range pids {
		if !WaitGone(pid, time.Until(deadline)) {
			left = append(left, pid)
		}
	}
	for _, pid := range left {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	var alive []int
	for _, pid := range left {
		if !WaitGone(pid, 5*time.Second) {
			alive = append(alive, pid)
		}
	}
	return alive
}

// WaitGone waits until pid no longer exists (or is a zombie), at most
// timeout, and reports whether it is gone.
func WaitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
