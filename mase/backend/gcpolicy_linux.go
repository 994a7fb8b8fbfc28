package backend

import "syscall"

// totalMemory is the machine's memory in bytes (0 when unknown).
func totalMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
