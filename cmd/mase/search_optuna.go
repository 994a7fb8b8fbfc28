package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/optuna"
	"github.com/gomase/gomase/mase/search/storages"
)

// `mase search export` and `mase search import`: a study to and from
// Optuna's JournalFileStorage format (mase/search/optuna.go).

const (
	searchExportUsage = "export --format optuna-journal --storage FILE|postgresql://... --study NAME OUT.log"
	searchImportUsage = "import --storage FILE|postgresql://... [--study NAME] [--as NAME] IN.log"
)

// optunaFormat is the one --format export writes.
const optunaFormat = "optuna-journal"

// parseWithFile parses flags and one positional FILE, which may come
// before, between or after the flags.
func parseWithFile(fs *flag.FlagSet, args []string, what string) (string, error) {
	var files []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch len(files) {
	case 0:
		return "", fmt.Errorf("no %s given (one file name after the flags)", what)
	case 1:
		return files[0], nil
	}
	return "", fmt.Errorf("%d files given (%s); give one %s", len(files), strings.Join(files, ", "), what)
}

// openExisting opens the storage of --storage, which must exist: a
// PostgreSQL URL, or a journal file that is there (opening a journal creates
// it otherwise).
func openExisting(spec string, logger *slog.Logger) (storages.Closer, error) {
	if spec == "" {
		return nil, errors.New("--storage is required (a journal file or a postgresql:// URL)")
	}
	if !storages.IsPostgresURL(spec) {
		if _, err := os.Stat(spec); err != nil {
			return nil, fmt.Errorf("--storage %s: no such journal file (give the journal of a study, or a postgresql:// URL)", shellArg(spec))
		}
	}
	return storages.Open(spec, logger)
}

// stateCounts is a JSON object of trial counts by state.
func stateCounts(m map[search.TrialState]int) map[string]int {
	out := map[string]int{}
	for st, n := range m {
		out[st.String()] = n
	}
	return out
}

// runSearchExport is `mase search export`.
func runSearchExport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("search export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", optunaFormat, "the format to write: "+optunaFormat+" (Optuna's JournalFileStorage, Optuna 3.1 and later)")
	storage := fs.String("storage", "", "where the study is: a journal file or a postgresql:// URL (required)")
	study := fs.String("study", "", "the study to export (required)")
	out, err := parseWithFile(fs, args, "output file")
	if err != nil {
		return fmt.Errorf("%w; usage: mase search %s", err, searchExportUsage)
	}
	if *format != optunaFormat {
		return fmt.Errorf("unknown --format %q (allowed: %s)", *format, optunaFormat)
	}
	if *study == "" {
		return errors.New("--study is required (the name of the study to export)")
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%s already exists; export writes a new Optuna journal (remove it, or name another file)", shellArg(out))
	}
	if err := checkOutputPath("the output file", out); err != nil {
		return err
	}
	st, err := openExisting(*storage, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer st.Close()
	// Written aside and renamed into place: nobody reads a half-written
	// journal, and a failed export leaves nothing.
	var journal bytes.Buffer
	n, err := optuna.ExportJournal(st, *study, &journal)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(atomicfile.File{Path: out, Data: journal.Bytes()}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "exported study %q (%d trials) from %s to %s; in Python: optuna.load_study(study_name=%q, "+
		"storage=optuna.storages.JournalStorage(optuna.storages.JournalFileStorage(%q))), or: optuna-dashboard %s\n",
		*study, n, shellArg(st.String()), shellArg(out), *study, out, shellArg(out))
	return json.NewEncoder(stdout).Encode(map[string]any{"exported": *study, "file": out, "format": optunaFormat, "trials": n})
}

// runSearchImport is `mase search import`.
func runSearchImport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("search import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storage := fs.String("storage", "", "where to create the study: a journal file (created if needed; an existing file must be a journal) or a postgresql:// URL (required)")
	study := fs.String("study", "", "the study of the journal to import (default: its only study)")
	as := fs.String("as", "", "the name of the study in --storage (default: the same as in the journal)")
	in, err := parseWithFile(fs, args, "Optuna journal")
	if err != nil {
		return fmt.Errorf("%w; usage: mase search %s", err, searchImportUsage)
	}
	if *storage == "" {
		return errors.New("--storage is required (a journal file or a postgresql:// URL)")
	}
	// The journal is checked before anything is read or created: a regular
	// file (not a device or a FIFO) within optuna.JournalFile's size, whose
	// replay fits in memory.
	f, size, err := limits.Open(in, optuna.JournalFile)
	if err != nil {
		return fmt.Errorf("importing: %w", err)
	}
	defer f.Close()
	if avail, known := limits.AvailableMemory(); known && size*importMemoryPerByte > avail.Bytes {
		return fmt.Errorf("importing %s (%s) needs about %s of memory, more than the %s available (%s)", shellArg(in), limits.Bytes(size),
			limits.Bytes(size*importMemoryPerByte), limits.Bytes(avail.Bytes), avail.Source)
	}
	imp, into, err := importInto(*storage, f, *study, *as, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return fmt.Errorf("importing %s: %w", shellArg(in), err)
	}
	total := 0
	var parts []string
	for s, n := range imp.Trials {
		total += n
		parts = append(parts, fmt.Sprintf("%d %v", n, s))
	}
	sort.Strings(parts)
	fmt.Fprintf(stderr, "imported study %q (%v, %d trials: %s) from %s into %s; go on with: mase search --storage %s --study %s …\n",
		imp.Study, imp.Direction, total, strings.Join(parts, ", "), shellArg(in), shellArg(into), shellArg(into), shellArg(imp.Study))
	for _, note := range imp.Notes {
		fmt.Fprintf(stderr, "note: %s\n", strings.Map(controlToSpace, note))
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"imported": imp.Study, "direction": imp.Direction.String(),
		"trials": total, "states": stateCounts(imp.Trials), "notes": imp.Notes})
}

// importMemoryPerByte is about the memory an import takes per byte of the
// Optuna journal: its replayed trials, the records written, and Go's maps
// (20,000 trials of a 12.7 MB journal took 120 MB).
const importMemoryPerByte = 12

// controlToSpace turns control characters into spaces (a note quotes names
// already; this keeps a line one line).
func controlToSpace(r rune) rune {
	if r < 0x20 || r == 0x7f {
		return ' '
	}
	return r
}

// importInto imports the Optuna journal r into the storage spec names and
// returns the storage's name. A journal file that does not exist yet is made
// aside and takes its name only when the import succeeded (and was not
// interrupted), so a failed import leaves no file; an existing file must be
// a journal, and the study is appended to it in one write, or not at all.
func importInto(spec string, r io.Reader, study, as string, logger *slog.Logger) (optuna.Import, string, error) {
	var imp optuna.Import
	if _, err := os.Lstat(spec); errors.Is(err, fs.ErrNotExist) && !storages.IsPostgresURL(spec) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err := storages.CreateJournal(ctx, spec, logger, func(j *storages.JournalStorage) error {
			var err error
			imp, err = optuna.ImportJournal(j, r, study, as)
			return err
		})
		if errors.Is(err, context.Canceled) {
			err = fmt.Errorf("interrupted; %s was not created", shellArg(spec))
		}
		return imp, spec, err
	}
	st, err := storages.Open(spec, logger)
	if err != nil {
		return imp, "", err
	}
	defer st.Close()
	imp, err = optuna.ImportJournal(st, r, study, as)
	return imp, st.String(), err
}
