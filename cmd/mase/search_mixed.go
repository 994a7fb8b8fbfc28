package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/lab/mixedprecision"
	"github.com/gomase/gomase/mase/scratch"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/train"
)

// mixedPrecisionFlags are the flags of --space mixed-precision.
type mixedPrecisionFlags struct {
	checkpoint, formats, widths, fracWidths, bits, pretrained *string
	startEpochs                                               *int
	lambda                                                    *float64
	acceptUnsealed                                            *bool
	// startDir is the temporary folder of a starting model trained for
	// this run; removeStart deletes it.
	startDir string
}

// removeStart deletes the temporary starting model, if one was trained.
func (m *mixedPrecisionFlags) removeStart() {
	if m.startDir != "" {
		os.RemoveAll(m.startDir)
		m.startDir = ""
	}
}

func addMixedPrecisionFlags(fs *flag.FlagSet) *mixedPrecisionFlags {
	return &mixedPrecisionFlags{
		checkpoint: fs.String("checkpoint", "", "mixed-precision: the trained model every trial starts from (default: train bert-tiny first for --start-epochs)"),
		formats: fs.String("formats", "integer", "mixed-precision: formats a Linear may take besides full precision, comma-separated, or all ("+
			strings.Join(mixedprecision.Formats, ", ")+")"),
		widths:         fs.String("widths", "", "mixed-precision: per-layer integer widths to search (Task 1: 8,16,32; empty: fixed 8)"),
		fracWidths:     fs.String("frac-widths", "", "mixed-precision: per-layer integer fractional widths to search (Task 1: 2,4,8; empty: fixed 4)"),
		bits:           fs.String("bits", mixedprecision.BitsStorage, "mixed-precision: the bit count of the cost: storage (real bits per weight element) or mase (MASE's precision sum)"),
		startEpochs:    fs.Int("start-epochs", 1, "mixed-precision: epochs of the starting model's training when no --checkpoint is given"),
		lambda:         number(fs, "lambda", 0, costWeights, "mixed-precision: the cost weight: the objective is accuracy − λ·average weight bits"),
		pretrained:     pretrainedFlag(fs),
		acceptUnsealed: acceptUnsealedFlag(fs),
	}
}

func (m *mixedPrecisionFlags) objective(ctx context.Context, f searchFlags, set map[string]bool, stderr io.Writer) (search.Objective, func() (map[string][]any, error), string, error) {
	space := mixedprecision.Space{Choices: []string{mixedprecision.Linear}}
	if *m.formats == "all" {
		space.Choices = append(space.Choices, mixedprecision.Formats...)
	} else {
		space.Choices = append(space.Choices, strings.Split(*m.formats, ",")...)
	}
	var err error
	if *m.widths != "" {
		if space.Widths, err = parseInts("--widths", *m.widths); err != nil {
			return nil, nil, "", err
		}
	}
	if *m.fracWidths != "" {
		if space.FracWidths, err = parseInts("--frac-widths", *m.fracWidths); err != nil {
			return nil, nil, "", err
		}
	}
	if err := space.Validate(); err != nil {
		return nil, nil, "", err
	}
	if *m.bits != mixedprecision.BitsStorage && *m.bits != mixedprecision.BitsMASE {
		return nil, nil, "", fmt.Errorf("unknown --bits %q (allowed: %s, %s)", *m.bits, mixedprecision.BitsStorage, mixedprecision.BitsMASE)
	}
	if *m.startEpochs < 1 {
		return nil, nil, "", fmt.Errorf("--start-epochs must be ≥ 1")
	}
	if *m.checkpoint != "" && set["pretrained"] {
		return nil, nil, "", errStartTwice
	}
	if err := checkStartCheckpoint(*m.checkpoint, *m.acceptUnsealed, stderr); err != nil {
		return nil, nil, "", err
	}
	sess, err := searchSession(ctx, f, stderr)
	if err != nil {
		return nil, nil, "", err
	}
	sess.Checkpoint, sess.AcceptUnsealed = *m.checkpoint, *m.acceptUnsealed
	if sess.Checkpoint == "" {
		dir, err := scratch.Dir("", "gomase-search-")
		if err != nil {
			return nil, nil, "", err
		}
		m.startDir = dir // removed by removeStart when the search ends
		sess.Checkpoint = filepath.Join(dir, "start")
		o := finetune.Options{Model: "bert-tiny", Dataset: f.dataset, Limit: f.limit, EvalLimit: f.evalLimit, MaxLen: f.maxLen,
			Seed: f.seed, Out: sess.Checkpoint, Pretrained: *m.pretrained}
		var check train.Config
		if err := f.training.apply(&check, &o); err != nil {
			return nil, nil, "", err
		}
		fmt.Fprintf(stderr, "training the starting model (%d epoch(s))\n", *m.startEpochs)
		res, err := trainStart(ctx, o, &sess.Config, *m.startEpochs, set["lr"], stderr)
		if err != nil {
			return nil, nil, "", err
		}
		fmt.Fprintf(stderr, "starting model: %s; accuracy %.4f\n", res.Start, res.Final.Accuracy)
	}
	obj := mixedprecision.NewObjective(space, sess)
	obj.Lambda, obj.Bits = *m.lambda, *m.bits
	value := "accuracy"
	if obj.Lambda > 0 {
		value = fmt.Sprintf("accuracy − %g·%s bits", obj.Lambda, obj.Bits)
	}
	grid := func() (map[string][]any, error) {
		mg, err := sess.Load()
		if err != nil {
			return nil, err
		}
		return space.Grid(mg)
	}
	return obj.Run, grid, value, nil
}
