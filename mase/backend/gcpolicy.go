package backend

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
)

// TensorGCPercent is the GOGC that TuneGC sets: tensor workloads allocate
// large buffers at a high rate, and at Go's default of 100 a collection
// every few calls empties the Go backend's buffer pools (sync.Pool drops
// its contents at each GC), so buffers are allocated and zeroed again.
const TensorGCPercent = 400

// TuneGC sets the garbage collector for tensor workloads unless the user
// chose otherwise: GOGC=TensorGCPercent when GOGC is unset, and, when
// GOMEMLIMIT is unset and the machine's memory is known, a soft memory
// limit of half of it, so that the higher GOGC never grows the heap past
// that (the collector runs more often near the limit). It returns what it
// set, as environment settings ("" when nothing).
func TuneGC() string {
	var set []string
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(TensorGCPercent)
		set = append(set, fmt.Sprintf("GOGC=%d", TensorGCPercent))
	}
	if total := totalMemory(); os.Getenv("GOMEMLIMIT") == "" && total > 0 {
		debug.SetMemoryLimit(int64(total / 2))
		set = append(set, fmt.Sprintf("GOMEMLIMIT=%dMiB", total/2>>20))
	}
	return strings.Join(set, " ")
}
