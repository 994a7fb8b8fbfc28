package pgtest

import "syscall"

// sysProcAttr runs a server process as cred (when not nil) and stops it
// (SIGINT, a fast shutdown) should the test process die without stopping it.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGINT}
}
