package passlog

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/gomase/gomase/mase/passes"
)

func TestNewPrintsMASELines(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, Info)
	l.Debug("Skipping node: x")
	l.Info("Found dropout module: bert.embeddings.dropout")
	l.With("pass", "lora").Warn("odd", "node", "a b")
	want := "INFO     Found dropout module: bert.embeddings.dropout\n" +
		"WARNING  odd pass=lora node=\"a b\"\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestQuietAndShowSetThePassesLogger(t *testing.T) {
	saved := passes.Logger
	defer func() { passes.Logger = saved }()
	Quiet()
	if passes.Logger.Enabled(t.Context(), slog.LevelInfo) || !passes.Logger.Enabled(t.Context(), slog.LevelWarn) {
		t.Error("Quiet: the passes' info lines are not hidden, or their warnings are")
	}
	Show(Debug)
	if !passes.Logger.Enabled(t.Context(), slog.LevelDebug) {
		t.Error("Show(Debug): debug lines are hidden")
	}
}
