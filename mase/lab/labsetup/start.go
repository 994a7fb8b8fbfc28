package labsetup

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/pretrained"
	"github.com/gomase/gomase/mase/train"
)

// Start is the checkpoint a lab notebook's experiments start from, and how
// the model in it began: from pretrained weights or from a seeded random
// initialisation. That choice sets the learning rate of every fine-tuning
// that follows (Config).
type Start struct {
	// Checkpoint is the checkpoint's base path (checkpoint.Import).
	Checkpoint string `json:"checkpoint"`
	// Origin says which notebook made it ("Tutorial 2's tutorial_2_lora").
	Origin string `json:"origin"`
	// Pretrained is whether the model began from pretrained weights.
	Pretrained bool `json:"pretrained"`
	// How says how Pretrained is known.
	How string `json:"how"`
	// TrainedNow is whether the checkpoint was fine-tuned by this call
	// (no earlier notebook had made one).
	TrainedNow bool `json:"trained_now"`
}

// Kind is the start as Comparison names it: "pretrained" or "seeded".
func (s Start) Kind() string {
	if s.Pretrained {
		return "pretrained"
	}
	return "seeded"
}

// Config is the training setting of every fine-tuning after this start,
// chosen as `mase compress` and `mase search` choose it: after a
// pretrained start HF Trainer's defaults, which MASE's get_trainer uses
// (PretrainedConfig: learning rate 5e-5, no warm-up); after a seeded start
// the setting the model was trained with (TrainConfig: 1e-3 with 10%
// warm-up, finetune.FromScratch), since 5e-5 barely moves a model that
// began from random weights.
func (s Start) Config() train.Config {
	if s.Pretrained {
		return PretrainedConfig()
	}
	return TrainConfig()
}

// Setting describes Config in words, for a cell's output.
func (s Start) Setting() string {
	c := s.Config()
	if s.Pretrained {
		return fmt.Sprintf("learning rate %g without warm-up (MASE's: HF Trainer's default), after a pretrained start", c.LearningRate)
	}
	return fmt.Sprintf("learning rate %g with %g%% warm-up, after a seeded start (MASE's 5e-5 barely moves a model that began from random weights)",
		c.LearningRate, 100*c.WarmupRatio)
}

// makers names the notebook that makes each chained checkpoint a lab can
// start from.
var makers = map[string]string{
	"tutorial_2_lora":       "Tutorial 2's",
	"tutorial_2_sft":        "Tutorial 2's",
	"tutorial_5_best_model": "Lab 2's",
}

// seededCheckpoints are the checkpoints whose models always begin from a
// seeded initialisation, and why.
var seededCheckpoints = map[string]string{
	"tutorial_5_best_model": "Lab 2's search builds every model from its configuration with seeded random weights, as MASE's construct_model does",
}

// FindStart returns where a lab starts: the first of names whose
// checkpoint exists in CheckpointDir, else TrainedStart's checkpoint
// (Tutorial 2's, or a model fine-tuned now with progress when Tutorial 2
// has not run), with how its model began (StartOf).
func FindStart(progress train.Progress, names ...string) (Start, error) {
	for _, name := range names {
		base, err := Checkpoint(name)
		if err != nil {
			return Start{}, err
		}
		if Exists(base) {
			return startOf(base, cmp.Or(makers[name], "the")+" "+name, false)
		}
	}
	var trainedNow bool
	if sft, err := Checkpoint("tutorial_2_sft"); err == nil {
		lora, err := Checkpoint("tutorial_2_lora")
		if err != nil {
			return Start{}, err
		}
		trainedNow = !Exists(sft) && !Exists(lora)
	}
	base, origin, err := TrainedStart(progress)
	if err != nil {
		return Start{}, err
	}
	return startOf(base, origin, trainedNow)
}

func startOf(base, origin string, trainedNow bool) (Start, error) {
	p, how, err := StartOf(base)
	if err != nil {
		return Start{}, err
	}
	return Start{Checkpoint: base, Origin: origin, Pretrained: p, How: how, TrainedNow: trainedNow}, nil
}

// startRecord is the file RecordStart writes beside a checkpoint.
type startRecord struct {
	Pretrained bool   `json:"pretrained"`
	Note       string `json:"note"`
}

// recordPath is where RecordStart writes base's record.
func recordPath(base string) string { return base + ".start.json" }

// RecordStart writes beside the checkpoint base (base.start.json) whether
// its model began from pretrained weights, with a note saying which
// (finetune.Result.Start), for StartOf. TrainedStart records the
// checkpoints it trains; a notebook that exports a checkpoint a later lab
// starts from records it the same way.
func RecordStart(base string, pretrained bool, note string) error {
	js, err := json.MarshalIndent(startRecord{Pretrained: pretrained, Note: note}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(atomicfile.File{Path: recordPath(base), Data: append(js, '\n')}); err != nil {
		return fmt.Errorf("recording how %s started: %w", filepath.Base(base), err)
	}
	return nil
}

// StartOf says whether the model of checkpoint base began from pretrained
// weights, and how that is known: from its record (RecordStart) when there
// is one; for a checkpoint whose models always begin seeded (Lab 2's
// tutorial_5_best_model), from that; otherwise as Tutorial 2 chose its
// start (StartModel): pretrained when the pretrained bert-tiny can be had
// (pretrained.Start "auto": a folder, the HuggingFace cache, the hub).
func StartOf(base string) (pretrainedStart bool, how string, err error) {
	switch js, err := os.ReadFile(recordPath(base)); {
	case err == nil:
		var r startRecord
		if err := json.Unmarshal(js, &r); err != nil {
			return false, "", fmt.Errorf("%s: %w", recordPath(base), err)
		}
		return r.Pretrained, fmt.Sprintf("recorded when %s was trained: %s", filepath.Base(base), r.Note), nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, "", err
	}
	if why, ok := seededCheckpoints[filepath.Base(base)]; ok {
		return false, why, nil
	}
	m, note, err := pretrained.Start(pretrained.Auto, pretrained.Options{NumLabels: 2, Seed: Seed})
	if err != nil {
		return false, "", err
	}
	how = "Tutorial 2 starts from the pretrained weights when it can have them; here: " + note
	return m != nil, how, nil
}

// datasetNames are the datasets' names as a student reads them.
var datasetNames = map[string]string{"sst2": "SST-2", "imdb": "IMDb", "imdb-sample": "an IMDb sample"}

// RunSetting says what a run's figures come from, for a LabFigure's Why
// beside the lab's: the start and the training data, e.g. "seeded start;
// SST-2, 1,000 training examples at 64 tokens".
func RunSetting(st Start, o finetune.Options, trainExamples int) string {
	name := cmp.Or(datasetNames[o.Dataset], o.Dataset)
	return fmt.Sprintf("%s start; %s, %s training examples at %d tokens", st.Kind(), name, thousands(trainExamples), o.MaxLen)
}

// thousands writes n with a comma every three digits (25,000).
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// IMDbTrainReviews is the size of IMDb's training split, all of which the
// full scale trains on.
const IMDbTrainReviews = 25000

// StartTraining says what Tutorial 2 fine-tunes the labs' starting model
// on at this scale (Options): "SST-2, 4,000 training examples at 64 tokens"
// at standard scale, "IMDb, 25,000 training examples at 512 tokens" at full.
func StartTraining() string {
	o := Options()
	n := o.Limit
	if n == 0 && o.Dataset == "imdb" {
		n = IMDbTrainReviews
	}
	return fmt.Sprintf("%s, %s training examples at %d tokens", cmp.Or(datasetNames[o.Dataset], o.Dataset), thousands(n), o.MaxLen)
}
