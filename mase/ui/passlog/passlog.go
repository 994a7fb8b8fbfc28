// Package passlog sets how much the passes say (MASE's logger levels):
// passes.Logger writes, one line per record, what a pass found or changed
// ("Found dropout module: …", "Replaced node: …"). MASE prints these
// through Python's logging at a level the user sets
// (set_logging_verbosity("warning") keeps the passes quiet,
// logger.setLevel("INFO") shows them); Quiet and Show do the same for
// gomase's passes, and New makes a logger of that kind for a pass written
// in a notebook.
package passlog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/gomase/gomase/mase/passes"
)

// The levels, with MASE's (Python logging's) names.
const (
	Debug   = slog.LevelDebug
	Info    = slog.LevelInfo
	Warning = slog.LevelWarn
	Error   = slog.LevelError
)

// New returns a logger that writes the records of level and above to w,
// one line each as MASE's logger prints them: the level name padded to
// nine characters, the message, then any attributes as key=value (no
// timestamp).
func New(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(&handler{out: &output{w: w}, level: level})
}

// Show makes the passes (passes.Logger) write the records of level and
// above to standard output.
func Show(level slog.Level) { passes.Logger = New(os.Stdout, level) }

// Quiet makes the passes write only warnings and errors (MASE's
// set_logging_verbosity("warning")).
func Quiet() { Show(Warning) }

// output serialises the writes of a logger and the loggers derived from it.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

type handler struct {
	out   *output
	level slog.Level
	attrs string // "key=value ..." of WithAttrs, each with a leading space
	group string // "group." of WithGroup
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s%s%s", levelName(r.Level), r.Message, h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(formatAttr(h.group, a))
		return true
	})
	b.WriteByte('\n')
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	_, err := io.WriteString(h.out.w, b.String())
	return err
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	for _, a := range attrs {
		c.attrs += formatAttr(h.group, a)
	}
	return &c
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group += name + "."
	return &c
}

// formatAttr writes " key=value", value quoted when it holds a blank.
func formatAttr(group string, a slog.Attr) string {
	if a.Equal(slog.Attr{}) {
		return ""
	}
	v := a.Value.Resolve().String()
	if strings.ContainsAny(v, " \t\n\"") || v == "" {
		v = fmt.Sprintf("%q", v)
	}
	return " " + group + a.Key + "=" + v
}

// levelName is Python logging's name of the level.
func levelName(l slog.Level) string {
	switch {
	case l < Info:
		return "DEBUG"
	case l < Warning:
		return "INFO"
	case l < Error:
		return "WARNING"
	}
	return "ERROR"
}
