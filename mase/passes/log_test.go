package passes

import (
	"log/slog"
	"testing"
)

func TestLogLevelNames(t *testing.T) {
	for name, want := range map[string]slog.Level{"": slog.LevelWarn, "warning": slog.LevelWarn, "WARN": slog.LevelWarn,
		"info": slog.LevelInfo, " Debug ": slog.LevelDebug, "error": slog.LevelError, "critical": slog.LevelError, "loud": slog.LevelWarn} {
		if got := LogLevel(name); got != want {
			t.Errorf("LogLevel(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDefaultLoggerQuietUnlessAsked(t *testing.T) {
	t.Setenv(LogEnv, "")
	if l := DefaultLogger(); l.Enabled(t.Context(), slog.LevelInfo) || !l.Enabled(t.Context(), slog.LevelWarn) {
		t.Errorf("default logger: info enabled %v, warn enabled %v; want quiet below warnings",
			l.Enabled(t.Context(), slog.LevelInfo), l.Enabled(t.Context(), slog.LevelWarn))
	}
	t.Setenv(LogEnv, "info")
	if l := DefaultLogger(); !l.Enabled(t.Context(), slog.LevelInfo) || l.Enabled(t.Context(), slog.LevelDebug) {
		t.Errorf("%s=info: want info lines and no debug lines", LogEnv)
	}
}
