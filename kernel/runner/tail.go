package runner

import (
	"strings"
	"sync"
)

// LineTail is an io.Writer that keeps the last lines written to it (a
// tool's output, for an error message); safe for concurrent writes.
type LineTail struct {
	mu    sync.Mutex
	max   int
	lines []string // complete lines, "\r" dropped
	part  string   // the line being written
}

// NewLineTail returns a LineTail that keeps at least the last max lines.
func NewLineTail(max int) *LineTail { return &LineTail{max: max} }

// Write records p.
func (t *LineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(t.part+string(p), "\n")
	t.part = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		t.lines = append(t.lines, strings.TrimSuffix(l, "\r"))
	}
	if len(t.lines) > 2*t.max { // trim now and then, not on every write
		t.lines = append([]string(nil), t.lines[len(t.lines)-t.max:]...)
	}
	return len(p), nil
}

// Last returns the last n complete lines and the unfinished one, if any.
func (t *LineTail) Last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if t.part != "" {
		if out != "" {
			out += "\n"
		}
		out += t.part
	}
	return out
}

// String returns the last max lines (see Last).
func (t *LineTail) String() string { return t.Last(t.max) }
