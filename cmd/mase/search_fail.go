package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gomase/gomase/mase/search"
)

// `mase search fail`: mark failed, by hand, running trials whose worker is
// gone but cannot be judged so (it ran on another machine and sent no
// heartbeat), so that a resumed search does not wait for them.

const searchFailUsage = "fail --storage FILE|postgresql://... --study NAME --trial N[,N...] [--retry-failed N]"

// runSearchFail is `mase search fail`.
func runSearchFail(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("search fail", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storage := fs.String("storage", "", "where the study is: a journal file or a postgresql:// URL (required)")
	study := fs.String("study", "", "the study (required)")
	trialList := fs.String("trial", "", "the numbers of the running trials to mark failed, comma-separated (required)")
	retry := fs.Int("retry-failed", 0, "enqueue each failed trial again with the same parameters, as a search with --retry-failed N would (0: no)")
	if err := parseFlagsOnly(fs, args); err != nil {
		return fmt.Errorf("%w; usage: mase search %s", err, searchFailUsage)
	}
	if *study == "" {
		return errors.New("--study is required (the name of the study whose trials to mark failed)")
	}
	if *retry < 0 {
		return fmt.Errorf("--retry-failed must be ≥ 0 (got %d; 0: no retry)", *retry)
	}
	numbers, err := parseTrialNumbers(*trialList)
	if err != nil {
		return err
	}
	st, err := openExisting(*storage, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer st.Close()
	ts, err := st.Trials(*study)
	if err != nil {
		return err
	}
	// Every trial is checked first: none is changed when one cannot be.
	for _, n := range numbers {
		if n >= len(ts) {
			return fmt.Errorf("study %s has no trial %d (it has %d trials, numbered from 0)", shellArg(*study), n, len(ts))
		}
		if s := ts[n].State; s != search.Running {
			return fmt.Errorf("trial %d of study %s is %v, not running; only a running trial can be marked failed", n, shellArg(*study), s)
		}
	}
	host, _ := os.Hostname()
	msg := fmt.Sprintf("marked failed by hand (mase search fail, pid %d on %s): its worker was reported gone", os.Getpid(), strconv.Quote(host))
	var retries []int
	for _, n := range numbers {
		_, r, err := st.FinishTrial(*study, n, search.Fail, math.NaN(), msg, *retry)
		if err != nil {
			return fmt.Errorf("marking trial %d of study %s failed: %w", n, shellArg(*study), err)
		}
		if r != nil {
			retries = append(retries, r.Number)
		}
	}
	fmt.Fprintf(stderr, "marked trial(s) %s of study %s in %s failed; a search started again goes on without waiting for them\n",
		joinInts(numbers), shellArg(*study), shellArg(st.String()))
	return json.NewEncoder(stdout).Encode(map[string]any{"study": *study, "failed": numbers, "retries": retries})
}

// parseTrialNumbers parses --trial: trial numbers, comma-separated, each
// once.
func parseTrialNumbers(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--trial is required (the numbers of the running trials to mark failed, e.g. --trial 7 or --trial 7,9)")
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--trial: %q is not a trial number (allowed: whole numbers ≥ 0, comma-separated)", part)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("--trial: trial %d is given twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// joinInts writes numbers as "7,9".
func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// shellArg writes s as a shell argument a user can copy: as it is when it
// holds only plain characters, else in single quotes, or, when it holds
// control characters (a newline, a terminal escape), as a Go-quoted string
// whose escapes show them instead of acting on the terminal.
func shellArg(s string) string {
	if s == "" {
		return "''"
	}
	plain, printable := true, true
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._-/:@%+=,", r):
		case !strconv.IsPrint(r) || r == utf8.RuneError:
			plain, printable = false, false
		default:
			plain = false
		}
	}
	switch {
	case plain:
		return s
	case printable:
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return strconv.Quote(s)
}
