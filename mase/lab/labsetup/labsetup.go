// Package labsetup holds what the lab notebooks share: the dataset and
// training settings of each scale (quick for CI, standard by default on
// the CPU, full — the labs' own — by default on a GPU), where the chained
// checkpoints live (MASE's ~/tutorial_2_lora, ~/tutorial_3_qat, ...), and
// the trained starting point of Labs 1–3.
package labsetup

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/pretrained"
	"github.com/gomase/gomase/mase/tokenizer"
	"github.com/gomase/gomase/mase/train"
)

// Seed is the labs' seed (HF Trainer's default).
const Seed = 42

// Scale is the notebooks' scale (scale.Current: GOMASE_SCALE, which
// `mase labs` sets).
func Scale() scale.Scale { return scale.Current() }

// Full reports whether the notebooks run at the labs' own scale.
func Full() bool { return Scale() == scale.Full }

// ByScale returns quick, standard or full as the notebooks' scale says.
func ByScale[T any](quick, standard, full T) T { return scale.By(quick, standard, full) }

// Options are the fine-tuning settings of the labs: IMDb at MASE's 512
// tokens at full scale; SST-2 sentences cut to 64 tokens otherwise, 2,000
// of them at quick scale and StandardSentences at standard scale (a model
// trained from scratch learns nothing measurable from a few hundred IMDb
// reviews in minutes, but does from a few thousand sentences).
func Options() finetune.Options {
	o := finetune.Options{Model: "bert-tiny", Dataset: "imdb", MaxLen: 512, Seed: Seed}
	if !Full() {
		o.Dataset, o.Limit, o.MaxLen = "sst2", ByScale(2000, StandardSentences, 0), 64
	}
	return o
}

// StandardSentences is how many SST-2 training sentences the standard
// scale fine-tunes the labs' starting model on.
const StandardSentences = 4000

// SweepSentences is how many SST-2 training sentences each point of a
// sweep (Lab 1) and each search trial (Labs 2 and 3) fine-tunes on at the
// standard scale; QuickSweepSentences at the quick one.
const (
	SweepSentences      = 2000
	QuickSweepSentences = 1000
)

// sweepLimit is the training sentences of a sweep point or a search trial
// below full scale.
func sweepLimit() int { return ByScale(QuickSweepSentences, SweepSentences, 0) }

// SweepOptions are the settings of Lab 1's sweep points: Options with
// sweepLimit training sentences below full scale.
func SweepOptions() finetune.Options {
	o := Options()
	if !Full() {
		o.Limit = sweepLimit()
	}
	return o
}

// SearchOptions are the settings of a search trial (Labs 2 and 3): IMDb
// at 512 tokens at full scale; below it SweepSentences SST-2 sentences
// (QuickSweepSentences at quick scale) cut to 32 tokens, evaluated on 400 test sentences at quick scale and on
// all 872 at standard scale.
func SearchOptions() finetune.Options {
	o := Options()
	if !Full() {
		o.Limit, o.EvalLimit, o.MaxLen = sweepLimit(), ByScale(400, 0, 0), 32
	}
	return o
}

// TrainConfig is finetune.FromScratch with the labs' seed, logging every
// 10 steps at quick scale, 50 at standard (HF's 500 at full).
func TrainConfig() train.Config {
	c := finetune.FromScratch()
	tuneConfig(&c)
	return c
}

// PretrainedConfig is HF's Trainer defaults (learning rate 5e-5, no
// warm-up) with TrainConfig's seed and logging: the lab's setting for a
// pretrained start.
func PretrainedConfig() train.Config {
	c := train.DefaultConfig()
	tuneConfig(&c)
	return c
}

// tuneConfig sets the labs' seed and logging interval.
func tuneConfig(c *train.Config) {
	c.Seed = Seed
	c.LogEvery = ByScale(10, 50, c.LogEvery)
}

// StartModel is the bert-tiny Tutorial 2 fine-tunes, as the lab starts:
// the pretrained prajjwal1/bert-tiny when it can be had (a folder, the
// HuggingFace cache, or the hub; pretrained.Start with "auto"), with
// PretrainedConfig; otherwise the seeded initialisation with TrainConfig.
// note says which, and why.
func StartModel() (model *nn.Model, cfg train.Config, note string, err error) {
	from, note, err := pretrained.Start(pretrained.Auto, pretrained.Options{NumLabels: 2, Seed: Seed})
	if err != nil {
		return nil, cfg, "", err
	}
	if from != nil {
		return from.Model, PretrainedConfig(), note, nil
	}
	model, err = models.NewBertTiny(Seed)
	return model, TrainConfig(), note, err
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
// ~/gomase-labs at full scale, …/quick and …/standard at the others (so
// runs at different scales never mix); $GOMASE_LABS_DIR overrides
// ~/gomase-labs.
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
	if sc := Scale(); sc != scale.Full {
		dir = filepath.Join(dir, string(sc))
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
// tutorial_2_sft, its start recorded with RecordStart) so each lab also
// runs on its own. It says which.
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
	o.Out, o.Progress, o.Pretrained, o.Tune = base, progress, pretrained.Auto, tuneConfig
	res, err := finetune.Run(o)
	if err != nil {
		return "", "", fmt.Errorf("training the starting checkpoint: %w", err)
	}
	if err := RecordStart(base, res.Pretrained, res.Start); err != nil {
		return "", "", err
	}
	return base, "a model fine-tuned now (Tutorial 2's SFT step), " + res.Start, nil
}
