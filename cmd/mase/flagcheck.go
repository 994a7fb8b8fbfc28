package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/checkpoint"
)

// A span is the range a number flag accepts: [Min, Max], either end open
// when its Open flag is set. Every number flag refuses NaN and ±Inf.
type span struct {
	Min, Max         float64
	MinOpen, MaxOpen bool
}

// The spans of the command's number flags.
var (
	// learningRates: AdamW's peak learning rate.
	learningRates = span{Min: 0, MinOpen: true, Max: 10}
	// fractions: a share of something, 0 to 1.
	fractions = span{Min: 0, Max: 1}
	// warmupRatios: HF's warmup_ratio, 0 up to but not 1.
	warmupRatios = span{Min: 0, Max: 1, MaxOpen: true}
	// loraAlphas: 0 stands for the rank.
	loraAlphas = span{Min: 0, Max: 1e6}
	// costWeights: a cost's weight in an objective.
	costWeights = span{Min: 0, Max: 1e6}
	// slopes: a leaky ReLU's negative slope.
	slopes = span{Min: -1e6, Max: 1e6}
)

// contains says whether v lies in s (false for NaN).
func (s span) contains(v float64) bool {
	above := v > s.Min || (!s.MinOpen && v == s.Min)
	below := v < s.Max || (!s.MaxOpen && v == s.Max)
	return above && below
}

func (s span) String() string {
	open, close := "[", "]"
	if s.MinOpen {
		open = "("
	}
	if s.MaxOpen {
		close = ")"
	}
	return fmt.Sprintf("%s%g, %g%s", open, s.Min, s.Max, close)
}

// numberFlag is a float64 flag whose values are checked when they are
// parsed, so a bad one stops the command before any work.
type numberFlag struct {
	v *float64
	s span
}

func (f numberFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatFloat(*f.v, 'g', -1, 64)
}

func (f numberFlag) Set(text string) error {
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || !f.s.contains(v) {
		return fmt.Errorf("want a finite number in %s", f.s)
	}
	*f.v = v
	return nil
}

// numberVar defines a float64 flag on fs that accepts only finite numbers
// in s.
func numberVar(fs *flag.FlagSet, p *float64, name string, value float64, s span, usage string) {
	*p = value
	fs.Var(numberFlag{p, s}, name, usage)
}

// number is numberVar returning the flag's variable.
func number(fs *flag.FlagSet, name string, value float64, s span, usage string) *float64 {
	p := new(float64)
	numberVar(fs, p, name, value, s, usage)
	return p
}

// durationFlag is a time.Duration flag that refuses negative durations
// (and zero when positive is set) when it is parsed.
type durationFlag struct {
	d        *time.Duration
	positive bool
}

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(text string) error {
	d, err := time.ParseDuration(text)
	switch {
	case err != nil:
		return fmt.Errorf("want a duration such as 90s, 15m or 2h")
	case f.positive && d <= 0:
		return fmt.Errorf("want a duration above 0 such as 90s, 15m or 2h")
	case d < 0:
		return fmt.Errorf("want a duration of 0 or more such as 90s, 15m or 2h")
	}
	*f.d = d
	return nil
}

// durationVar defines a duration flag on fs that refuses negative values
// (and 0 when positive).
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, positive bool, usage string) {
	*p = value
	fs.Var(durationFlag{p, positive}, name, usage)
}

// duration is durationVar returning the flag's variable.
func duration(fs *flag.FlagSet, name string, value time.Duration, positive bool, usage string) *time.Duration {
	p := new(time.Duration)
	durationVar(fs, p, name, value, positive, usage)
	return p
}

// checkOutputPath checks, before any work, that a command will be able to
// write path, given by flagName: its folder exists and takes new files,
// path is not a folder, and its extension is one of exts when any are
// given (compared without case).
func checkOutputPath(flagName, path string, exts ...string) error {
	if path == "" {
		return nil
	}
	if len(exts) > 0 && !slices.Contains(exts, strings.ToLower(filepath.Ext(path))) {
		return fmt.Errorf("%s %s: unsupported file extension (allowed: %s)", flagName, path, strings.Join(exts, ", "))
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return fmt.Errorf("%s %s: is a folder; give a file name", flagName, path)
	}
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return fmt.Errorf("%s %s: no folder %s to write it in (create it first)", flagName, path, dir)
	}
	if err := atomicfile.CanWrite(dir); err != nil {
		return fmt.Errorf("%s %s: cannot write in %s: %v", flagName, path, dir, err)
	}
	return nil
}

// checkCheckpointOut checks, before any work, a flag naming where a
// checkpoint is exported (train --out, search --best): the base of its two
// files, not a folder (Export would write FOLDER/model.*, which a user
// giving a folder rarely means), in a folder that takes new files, and
// replacing only files an Export wrote (checkpoint.CheckOutput).
func checkCheckpointOut(flagName, base string) error {
	if info, err := os.Stat(base); err == nil && info.IsDir() {
		return fmt.Errorf("%s %s: is a folder; give a file name (the checkpoint's base: %s writes BASE.json and BASE.safetensors)", flagName, base, flagName)
	}
	if err := checkpoint.CheckOutput(base); err != nil {
		return fmt.Errorf("%s: %w", flagName, err)
	}
	return nil
}
