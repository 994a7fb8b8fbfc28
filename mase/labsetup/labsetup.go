// Package labsetup holds what the lab notebooks share: the dataset and
// training scale of quick mode (CI) and full mode (the lab's), where the
// chained checkpoints live (MASE's ~/tutorial_2_lora, ~/tutorial_3_qat,
// ...), and the trained starting point of Labs 1–3.
package labsetup

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomase/gomase/kernel/labs"
	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/finetune"
	"github.com/gomase/gomase/mase/tokenizer"
	"github.com/gomase/gomase/mase/train"
)

// Seed is the labs' seed (HF Trainer's default).
const Seed = 42

// Quick reports whether the notebooks run in quick mode (GOMASE_QUICK).
func Quick() bool { return labs.Quick() }

// Options are the fine-tuning settings of the labs: IMDb at MASE's 512
// tokens in full mode; in quick mode 2,000 SST-2 sentences cut to 64
// tokens (a model trained from scratch learns nothing measurable from a
// few hundred IMDb reviews in minutes, but does from 2,000 sentences).
func Options() finetune.Options {
	o := finetune.Options{Model: "bert-tiny", Dataset: "imdb", MaxLen: 512, Seed: Seed}
	if Quick() {
		o.Dataset, o.Limit, o.MaxLen = "sst2", 2000, 64
	}
	return o
}

// TrainConfig is finetune.FromScratch with the labs' seed, logging every
// 10 steps in quick mode (HF's 500 otherwise).
func TrainConfig() train.Config {
	c := finetune.FromScratch()
	c.Seed = Seed
	if Quick() {
		c.LogEvery = 10
	}
	return c
}

// Batch returns the training batch options: batch 8, truncation to the
// options' length, padding as the backend wants it (finetune.Batching).
func Batch(o finetune.Options) data.BatchOptions {
	trainOpts, _, err := finetune.Batching(o, 8)
	if err != nil {
		// Only a backend that cannot be opened fails here; training
		// reports that again, with its cause.
		return data.BatchOptions{BatchSize: 8, MaxLength: o.MaxLen, Seed: o.Seed}
	}
	trainOpts.Shuffle = false // the trainer's callers shuffle per epoch
	return trainOpts
}

// Splits loads and pretokenises the training and test splits of o.
func Splits(o finetune.Options) (trainData, testData *data.Pretokenized, err error) {
	trainSplit, testSplit, err := finetune.LoadSplits(o)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.BertBaseUncased()
	if err != nil {
		return nil, nil, err
	}
	return data.Pretokenize(trainSplit.Examples, tok), data.Pretokenize(testSplit.Examples, tok), nil
}

// CheckpointDir is where the notebooks chain their checkpoints:
// ~/gomase-labs (…/quick in quick mode, so CI never mixes with a full
// run); $GOMASE_LABS_DIR overrides it.
func CheckpointDir() (string, error) {
	dir := os.Getenv("GOMASE_LABS_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			dir = filepath.Join(os.TempDir(), "gomase-labs")
		} else {
			dir = filepath.Join(home, "gomase-labs")
		}
	}
	if Quick() {
		dir = filepath.Join(dir, "quick")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint directory: %w", err)
	}
	return dir, nil
}

// Checkpoint returns the base path of a named checkpoint
// ("tutorial_2_lora") in CheckpointDir.
func Checkpoint(name string) (string, error) {
	dir, err := CheckpointDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// Exists reports whether a checkpoint's two files are there.
func Exists(base string) bool {
	for _, ext := range []string{".json", ".safetensors"} {
		if _, err := os.Stat(base + ext); err != nil {
			return false
		}
	}
	return true
}

// TrainedStart returns the checkpoint Labs 1–3 start from: Tutorial 2's
// tutorial_2_lora when the notebook has made it, else a fine-tuned model
// made now (one epoch of full fine-tuning with Options, saved as
// tutorial_2_sft) so each lab also runs on its own. It says which.
func TrainedStart(progress train.Progress) (base, origin string, err error) {
	for _, name := range []string{"tutorial_2_lora", "tutorial_2_sft"} {
		if base, err = Checkpoint(name); err != nil {
			return "", "", err
		}
		if Exists(base) {
			return base, "Tutorial 2's " + name, nil
		}
	}
	if base, err = Checkpoint("tutorial_2_sft"); err != nil {
		return "", "", err
	}
	o := Options()
	cfg := TrainConfig()
	o.Train, o.Out, o.Progress = &cfg, base, progress
	if _, err := finetune.Run(o); err != nil {
		return "", "", fmt.Errorf("training the starting checkpoint: %w", err)
	}
	return base, "a model fine-tuned now (Tutorial 2's SFT step)", nil
}
