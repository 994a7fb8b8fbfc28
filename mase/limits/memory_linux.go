package limits

import (
	"bytes"
	"os"
	"syscall"
)

// memAvailable reads MemAvailable from /proc/meminfo.
func memAvailable() (int64, bool) {
	raw, err := readSmall(os.DirFS("/"), "proc/meminfo")
	if err != nil {
		return 0, false
	}
	return parseMemInfo(bytes.NewReader(raw))
}

// memorySources are the bounds AvailableMemory takes the smallest of.
func memorySources() []Memory {
	var out []Memory
	if n, ok := memAvailable(); ok {
		out = append(out, Memory{n, SourceMemAvailable})
	}
	root := os.DirFS("/")
	if n, ok := cgroupHeadroom(root); ok {
		out = append(out, Memory{n, SourceCgroup})
	}
	status, _ := readSmall(root, "proc/self/status")
	for _, r := range []struct {
		resource int
		mapped   string // the /proc/self/status field the limit counts
		source   string
	}{{syscall.RLIMIT_AS, "VmSize:", SourceRlimitAS}, {syscall.RLIMIT_DATA, "VmData:", SourceRlimitData}} {
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(r.resource, &lim); err != nil {
			continue
		}
		used, _ := parseKBField(bytes.NewReader(status), r.mapped)
		if n, ok := rlimitHeadroom(lim.Cur, used); ok {
			out = append(out, Memory{n, r.source})
		}
	}
	return out
}
