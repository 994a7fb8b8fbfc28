package storages

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gomase/gomase/mase/scratch"
)

// owner identifies the process that runs a trial, so that a later process can
// tell whether a Running trial's process is gone (crashed or killed).
type owner struct {
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Boot is the Linux boot id; a different one means the machine rebooted.
	Boot string `json:"boot,omitempty"`
	// Start is the process start time in clock ticks since boot (Linux
	// /proc/<pid>/stat field 22); with PID it survives PID reuse.
	Start uint64 `json:"start,omitempty"`
}

func (o owner) String() string {
	return fmt.Sprintf("pid %d on %s", o.PID, printable(o.Host))
}

// printable returns s as it is when it is a plain word (letters, digits,
// and . _ - : / @ +), else quoted with its control characters escaped, so
// that a name read from a file cannot write terminal escape sequences or
// break a message onto several lines.
func printable(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:/@+", r)) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

var selfOwner = sync.OnceValue(func() owner {
	host, _ := os.Hostname()
	o := owner{Host: host, PID: os.Getpid()}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		o.Boot = strings.TrimSpace(string(b))
	}
	if start, _, ok := procStat(o.PID); ok {
		o.Start = start
	}
	return o
})

// procStat reads the start time and state of a process from /proc (Linux).
func procStat(pid int) (start uint64, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil || len(f[0]) == 0 {
		return 0, 0, false
	}
	return start, f[0][0], true
}

// alive reports whether the owner process still runs; known is false when
// this process cannot tell (another host, or no owner recorded), in which
// case the trial is left alone.
func (o owner) alive() (alive, known bool) { return o.aliveFrom(selfOwner()) }

// aliveFrom is alive as judged by the process self (a test may make a
// storage claim another host).
func (o owner) aliveFrom(self owner) (alive, known bool) {
	if o.PID <= 0 || o.Host != self.Host {
		return true, false
	}
	if o.Boot != "" && self.Boot != "" && o.Boot != self.Boot {
		return false, true
	}
	if o.PID == self.PID && o.Start == self.Start {
		return true, true
	}
	if self.Start != 0 { // /proc works here
		start, state, ok := procStat(o.PID)
		if !ok {
			return false, true
		}
		if state == 'Z' || state == 'X' {
			return false, true
		}
		if o.Start != 0 && start != o.Start {
			return false, true // the PID was reused by another process
		}
		return true, true
	}
	return scratch.ProcessAlive(o.PID), true
}

// unjudgedWhy says why a Running trial of owner o cannot be judged from the
// process self, which sees no heartbeat from it.
func unjudgedWhy(o, self owner) string {
	if o.PID <= 0 {
		return "no worker is recorded with it (it was written by another program or by hand), and it sends no heartbeat"
	}
	return fmt.Sprintf("its worker runs on machine %q, not on this one (%q), so its process cannot be looked up, and it sends no heartbeat", o.Host, self.Host)
}

// ownerName names the worker o for a message ("" when none is recorded).
func ownerName(o owner) string {
	if o.PID <= 0 {
		return ""
	}
	return o.String()
}
