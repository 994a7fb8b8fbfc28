package limits

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// MaxModelBytes caps the float32 parameters of a model built from a config
// and the tensors a loader materialises from one checkpoint: 8 GiB, 2^31
// parameters (bert-large has 3.4·10^8, 1.3 GB).
const MaxModelBytes int64 = 8 << 30

// Memory is an amount of memory this process may still allocate, with
// what said so.
type Memory struct {
	Bytes int64
	// Source names the bound that gave Bytes: SourceMemAvailable,
	// SourceCgroup, SourceRlimitAS or SourceRlimitData.
	Source string
}

// The bounds AvailableMemory reads.
const (
	SourceMemAvailable = "MemAvailable"
	SourceCgroup       = "cgroup limit"
	SourceRlimitAS     = "RLIMIT_AS"
	SourceRlimitData   = "RLIMIT_DATA"
)

// AvailableMemory is the smallest of the memory the kernel says can be
// allocated without swapping (MemAvailable), the room left under this
// process's cgroup memory limit (v2 memory.max, v1 memory.limit_in_bytes,
// each level up to the root, less the usage that cannot be reclaimed), and
// the room left under its RLIMIT_AS and RLIMIT_DATA (the limit less the
// address space already mapped). ok is false when none of them is known
// (not Linux).
//
// The answer is kept for availableTTL, so that a loader reading
// thousands of small files (IMDb's reviews) does not read /proc and the
// cgroup files for each.
func AvailableMemory() (m Memory, ok bool) {
	available.Lock()
	defer available.Unlock()
	if now := time.Now(); available.at.IsZero() || now.Sub(available.at) >= availableTTL {
		available.m, available.ok = smallest(memorySources()...)
		available.at = now
	}
	return available.m, available.ok
}

// availableTTL is how long AvailableMemory's answer is kept.
const availableTTL = 100 * time.Millisecond

// available is AvailableMemory's last answer and when it was found.
var available struct {
	sync.Mutex
	at time.Time
	m  Memory
	ok bool
}

// smallest returns the smallest known bound.
func smallest(bounds ...Memory) (m Memory, ok bool) {
	for _, b := range bounds {
		if !ok || b.Bytes < m.Bytes {
			m, ok = b, true
		}
	}
	if ok && m.Bytes < 0 {
		m.Bytes = 0
	}
	return m, ok
}

// MemAvailable is the memory the kernel says can be allocated without
// swapping (MemAvailable of /proc/meminfo); ok is false where that is not
// known (not Linux, or the file unreadable). AvailableMemory also takes
// the process's own limits into account.
func MemAvailable() (n int64, ok bool) {
	return memAvailable()
}

// parseMemInfo reads the MemAvailable line ("MemAvailable: 123 kB") of a
// /proc/meminfo text.
func parseMemInfo(r io.Reader) (int64, bool) {
	return parseKBField(r, "MemAvailable:")
}

// parseKBField reads the line "<field> <n> kB" of a /proc text such as
// /proc/meminfo or /proc/self/status and returns n·1024.
func parseKBField(r io.Reader, field string) (int64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(field))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 || kb > (1<<62)/1024 {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// ModelBytes checks that a model whose parameters take n bytes (what names
// it in the error) is within MaxModelBytes and fits in the memory
// available (AvailableMemory, where the system says how much that is).
func ModelBytes(what string, n int64) error {
	avail, ok := AvailableMemory()
	return modelBytes(what, n, avail, ok)
}

func modelBytes(what string, n int64, avail Memory, haveAvail bool) error {
	return fits(what, n, true, "", "a model", avail, haveAvail)
}

// Work checks that a computation needing n bytes (an estimate; what names
// it) is within MaxModelBytes and the memory available: the check of a
// benchmark's or a search space's sizes before anything is allocated. ok
// false says the estimate itself overflowed int64.
func Work(what string, n int64, ok bool) error {
	avail, known := AvailableMemory()
	return fits(what, n, ok, "about ", "one computation", avail, known)
}

// fits is ModelBytes and Work: n bytes (exact unless about says it is an
// estimate; ok false when it overflowed) against MaxModelBytes, which
// whose names, and against the memory available when it is known.
func fits(what string, n int64, ok bool, about, whose string, avail Memory, haveAvail bool) error {
	switch {
	case !ok || n < 0:
		return fmt.Errorf("%s needs more than the %s %s may take (limits.MaxModelBytes; the size overflows int64)", what, Bytes(MaxModelBytes), whose)
	case n > MaxModelBytes:
		return fmt.Errorf("%s needs %s%s, more than the %s %s may take (limits.MaxModelBytes)", what, about, Bytes(n), Bytes(MaxModelBytes), whose)
	case haveAvail && n > avail.Bytes:
		return fmt.Errorf("%s needs %s%s, more than the %s of memory available (%s)", what, about, Bytes(n), Bytes(avail.Bytes), avail.Source)
	}
	return nil
}

// Product returns the product of dims and whether it is exact (no int64
// overflow, no negative factor).
func Product(dims ...int64) (int64, bool) {
	p := int64(1)
	for _, d := range dims {
		var ok bool
		if p, ok = Mul(p, d); !ok || d < 0 {
			return 0, false
		}
	}
	return p, true
}

// A Budget counts the bytes a loader allocates for one input, against a
// maximum and against the memory available when the budget was made.
type Budget struct {
	what        string
	max, used   int64
	avail       Memory
	knownMemory bool
}

// NewBudget makes a budget of max bytes; what names the allocations in
// errors ("the checkpoint's tensors").
func NewBudget(what string, max int64) *Budget {
	b := &Budget{what: what, max: max}
	b.avail, b.knownMemory = AvailableMemory()
	return b
}

// Take accounts n more bytes, or says why they may not be allocated.
func (b *Budget) Take(n int64) error {
	total, ok := Add(b.used, n)
	if n < 0 || !ok || total > b.max {
		need := "more than " + Bytes(b.max)
		if ok && n >= 0 {
			need = Bytes(total)
		}
		return fmt.Errorf("%s need %s, more than the %s allowed", b.what, need, Bytes(b.max))
	}
	if b.knownMemory && total > b.avail.Bytes {
		return fmt.Errorf("%s need %s, more than the %s of memory available (%s)", b.what, Bytes(total), Bytes(b.avail.Bytes), b.avail.Source)
	}
	b.used = total
	return nil
}
