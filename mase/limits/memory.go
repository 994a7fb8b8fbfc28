package limits

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
)

// MaxModelBytes caps the float32 parameters of a model built from a config
// and the tensors a loader materialises from one checkpoint: 8 GiB, 2^31
// parameters (bert-large has 3.4·10^8, 1.3 GB).
const MaxModelBytes int64 = 8 << 30

// MemAvailable is the memory the kernel says can be allocated without
// swapping (MemAvailable of /proc/meminfo); ok is false where that is not
// known (not Linux, or the file unreadable).
func MemAvailable() (n int64, ok bool) {
	if runtime.GOOS != "linux" {
		return 0, false
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return parseMemInfo(f)
}

// parseMemInfo reads the MemAvailable line ("MemAvailable: 123 kB") of a
// /proc/meminfo text.
func parseMemInfo(r interface{ Read([]byte) (int, error) }) (int64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemAvailable:"))
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
// available (where the system says how much that is).
func ModelBytes(what string, n int64) error {
	avail, ok := MemAvailable()
	return modelBytes(what, n, avail, ok)
}

func modelBytes(what string, n, avail int64, haveAvail bool) error {
	return fits(what, n, true, "", "a model", avail, haveAvail)
}

// Work checks that a computation needing n bytes (an estimate; what names
// it) is within MaxModelBytes and the memory available: the check of a
// benchmark's or a search space's sizes before anything is allocated. ok
// false says the estimate itself overflowed int64.
func Work(what string, n int64, ok bool) error {
	avail, known := MemAvailable()
	return fits(what, n, ok, "about ", "one computation", avail, known)
}

// fits is ModelBytes and Work: n bytes (exact unless about says it is an
// estimate; ok false when it overflowed) against MaxModelBytes, which
// whose names, and against the memory available when it is known.
func fits(what string, n int64, ok bool, about, whose string, avail int64, haveAvail bool) error {
	switch {
	case !ok || n < 0:
		return fmt.Errorf("%s needs more than the %s %s may take (limits.MaxModelBytes)", what, Bytes(MaxModelBytes), whose)
	case n > MaxModelBytes:
		return fmt.Errorf("%s needs %s%s, more than the %s %s may take (limits.MaxModelBytes)", what, about, Bytes(n), Bytes(MaxModelBytes), whose)
	case haveAvail && n > avail:
		return fmt.Errorf("%s needs %s%s, more than the %s of memory available", what, about, Bytes(n), Bytes(avail))
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
	avail       int64
	knownMemory bool
}

// NewBudget makes a budget of max bytes; what names the allocations in
// errors ("the checkpoint's tensors").
func NewBudget(what string, max int64) *Budget {
	b := &Budget{what: what, max: max}
	b.avail, b.knownMemory = MemAvailable()
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
	if b.knownMemory && total > b.avail {
		return fmt.Errorf("%s need %s, more than the %s of memory available", b.what, Bytes(total), Bytes(b.avail))
	}
	b.used = total
	return nil
}
