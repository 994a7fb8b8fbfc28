package passes

import (
	"log/slog"
	"os"
	"strings"
)

// LogEnv names the environment variable that sets the level of the
// passes' log lines, with the names of MASE's set_logging_verbosity:
// "debug" (every node a pass changes and every node it skips), "info"
// (every node it changes: "Quantized node …", "Pruning module: …"),
// "warning" (the default: only what went wrong) or "error". In a GoNB
// notebook, `%env GOMASE_LOG info` sets it for every cell run after it.
const LogEnv = "GOMASE_LOG"

// DefaultLogger is the passes' logger when nothing replaces Logger: lines
// of the level LogEnv names and above (warnings when it is unset or not a
// level name) to stderr, without timestamps.
func DefaultLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: LogLevel(os.Getenv(LogEnv)),
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
}

// LogLevel reads a level name as MASE's set_logging_verbosity does
// ("debug", "info", "warning", "error"; any case; "warn" too): an
// empty or unknown name is warning.
func LogLevel(name string) slog.Level {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	case "error", "critical":
		return slog.LevelError
	}
	return slog.LevelWarn
}
