package limits

import (
	"fmt"
	"strings"
)

// A Dim is one named factor of a size: a flag and its value
// (Dim{"--batch", 4096}), a model's field (Dim{"hidden_size", 128}) or,
// unnamed, a constant.
type Dim struct {
	Name string
	N    int64
}

// An Estimate adds up the working memory of one computation in bytes,
// every product and sum checked for overflow: an over-estimate made before
// anything is allocated, which Check holds against the bounds.
type Estimate struct {
	// State is the model's own part: its parameters and, when it trains,
	// their gradients and optimizer moments. Check holds it to
	// MaxModelBytes.
	State int64
	// StateWhat says what State counts, for its error ("the weights,
	// gradients and AdamW's two moments of 4386178 parameters").
	StateWhat string
	// Total is the whole working memory, State included.
	Total int64
	// Overflow names the first product or sum that overflowed int64
	// ("--batch × --seq × num_attention_heads"); the counts mean nothing
	// then.
	Overflow string
}

// product returns bytesPer × the dims, or ok false after recording an
// overflow (or a negative factor) under the dims' names.
func (e *Estimate) product(bytesPer int64, dims []Dim) (int64, bool) {
	p, ok := bytesPer, bytesPer >= 0
	for _, d := range dims {
		var exact bool
		p, exact = Mul(p, d.N)
		ok = ok && exact && d.N >= 0
	}
	if !ok {
		e.overflowed(dims)
	}
	return p, ok
}

// overflowed records the first overflow, named by the dims' names.
func (e *Estimate) overflowed(dims []Dim) {
	if e.Overflow != "" {
		return
	}
	var names []string
	for _, d := range dims {
		if d.Name != "" {
			names = append(names, d.Name)
		}
	}
	e.Overflow = strings.Join(names, " × ")
	if e.Overflow == "" {
		e.Overflow = "the working-memory estimate"
	}
}

// Add counts bytesPer × the dims into Total.
func (e *Estimate) Add(bytesPer int64, dims ...Dim) {
	if p, ok := e.product(bytesPer, dims); ok {
		e.addTotal(p, dims)
	}
}

// AddState counts bytesPer × the dims into State and Total.
func (e *Estimate) AddState(bytesPer int64, dims ...Dim) {
	p, ok := e.product(bytesPer, dims)
	if !ok {
		return
	}
	if s, ok := Add(e.State, p); ok {
		e.State = s
	} else {
		e.overflowed(dims)
	}
	e.addTotal(p, dims)
}

func (e *Estimate) addTotal(p int64, dims []Dim) {
	if t, ok := Add(e.Total, p); ok {
		e.Total = t
	} else {
		e.overflowed(dims)
	}
}

// Include adds o's State and Total (and its overflow, if it had one).
func (e *Estimate) Include(o Estimate) {
	if o.Overflow != "" {
		if e.Overflow == "" {
			e.Overflow = o.Overflow
		}
		return
	}
	e.AddState(1, Dim{N: o.State})
	e.Add(1, Dim{N: o.Total - o.State})
	if e.StateWhat == "" {
		e.StateWhat = o.StateWhat
	}
}

// Times multiplies Total by k (copies of everything held; State, the
// model's own part, is not multiplied).
func (e *Estimate) Times(k int64, name string) {
	t, ok := Mul(e.Total, k)
	if !ok {
		e.overflowed([]Dim{{Name: name}})
		return
	}
	e.Total = t
}

// Larger returns whichever of a and b needs more (one that overflowed
// first).
func Larger(a, b Estimate) Estimate {
	switch {
	case a.Overflow != "":
		return a
	case b.Overflow != "" || b.Total > a.Total:
		return b
	}
	return a
}

// Check refuses the estimate in one line starting with what (the command
// and the flags that size it: "profile: --batch 4096 --seq 512") when it
// overflowed, when State is above MaxModelBytes, or when Total is above
// the memory available (AvailableMemory, where it is known).
func (e Estimate) Check(what string) error {
	avail, ok := AvailableMemory()
	return e.check(what, avail, ok)
}

func (e Estimate) check(what string, avail Memory, haveAvail bool) error {
	switch {
	case e.Overflow != "":
		return fmt.Errorf("%s: %s overflows int64 (more working memory than any machine has); use smaller sizes", what, e.Overflow)
	case e.State > MaxModelBytes:
		return fmt.Errorf("%s: %s need %s, more than the %s a model may take (limits.MaxModelBytes)", what, e.StateWhat, Bytes(e.State), Bytes(MaxModelBytes))
	case haveAvail && e.Total > avail.Bytes:
		return fmt.Errorf("%s needs about %s of working memory; %s is available (%s)", what, Bytes(e.Total), Bytes(avail.Bytes), avail.Source)
	}
	return nil
}
