package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/checkpoint"
)

// The acceptance run: fine-tuning bert-tiny from random
// initialisation on 2,000 SST-2 sentences must beat the untrained baseline
// on the 872 test sentences by a clear margin (fixed seed).
func TestTrainSST2ImprovesOnBaseline(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sst2_sft")
	code, stdout, stderr := runCLI("train", "--model", "bert-tiny", "--dataset", "sst2", "--limit", "2000", "--max-len", "64",
		"--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Baseline, Final struct{ Accuracy float64 }
		TrainExamples   int `json:"train_examples"`
		EvalExamples    int `json:"eval_examples"`
		History         struct{ Steps int }
		Checkpoint      string
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bad JSON: %v\n%.300s", err, stdout)
	}
	t.Logf("baseline %.4f → trained %.4f", res.Baseline.Accuracy, res.Final.Accuracy)
	if res.TrainExamples != 2000 || res.EvalExamples != 872 || res.History.Steps != 250 {
		t.Errorf("run shape: %+v", res)
	}
	if res.Final.Accuracy < res.Baseline.Accuracy+0.06 {
		t.Errorf("accuracy %.4f → %.4f: want an improvement of at least 0.06", res.Baseline.Accuracy, res.Final.Accuracy)
	}
	for _, ext := range []string{".safetensors", ".json"} {
		if _, err := os.Stat(out + ext); err != nil {
			t.Errorf("checkpoint %s missing: %v", ext, err)
		}
	}
	mg, err := checkpoint.Import(out)
	if err != nil {
		t.Fatalf("re-importing the checkpoint: %v", err)
	}
	if mg.Graph.Node("crossentropyloss_0") == nil {
		t.Error("imported graph lost the loss node")
	}
}

func TestTrainBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--dataset", "mnist"}, `unknown dataset "mnist" (allowed: imdb, imdb-sample, sst2)`},
		{[]string{"train", "--model", "mlp", "--dataset", "sst2"}, "bert-tiny"},
		{[]string{"train", "--dataset", "sst2", "--lr", "0"}, `invalid value "0" for flag -lr`},
		{[]string{"train", "--dataset", "sst2", "--max-len", "1"}, "--max-len"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d stderr %q, want one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestTrainPretrainedFolder: --pretrained PATH starts from a local
// HuggingFace-style folder (a BertModel checkpoint written by PyTorch,
// without a classifier): transformers' warnings on stderr, HF's learning
// rate, the folder's tokenizer, and a checkpoint that imports again.
func TestTrainPretrainedFolder(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	folder := filepath.Join("..", "..", "mase", "pretrained", "testdata", "base")
	out := filepath.Join(t.TempDir(), "from_pretrained")
	code, stdout, stderr := runCLI("train", "--pretrained", folder, "--dataset", "sst2", "--limit", "32", "--eval-limit", "32",
		"--max-len", "32", "--quiet", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Model, Start string
		Config       struct {
			LearningRate float64 `json:"learning_rate"`
			WarmupRatio  float64 `json:"warmup_ratio"`
		}
		History struct{ Steps int }
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bad JSON: %v\n%.300s", err, stdout)
	}
	if res.Model != folder || !strings.Contains(res.Start, "starting from the pretrained "+folder+" (pytorch_model.bin)") ||
		res.Config.LearningRate != 5e-5 || res.Config.WarmupRatio != 0 || res.History.Steps != 4 {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(stderr, "newly initialized: ['classifier.weight', 'classifier.bias']") {
		t.Errorf("stderr lacks transformers' warning about the new head: %q", stderr)
	}
	if _, err := checkpoint.Import(out); err != nil {
		t.Errorf("re-importing the checkpoint: %v", err)
	}
	// --lr given on the command line wins; a folder that is not a model fails in one line.
	code, stdout, _ = runCLI("train", "--pretrained", folder, "--dataset", "sst2", "--limit", "16", "--eval-limit", "16",
		"--max-len", "32", "--quiet", "--lr", "3e-4", "--json")
	if code != 0 || !strings.Contains(stdout, `"learning_rate": 0.0003`) {
		t.Errorf("--lr 3e-4: exit %d, %.400s", code, stdout)
	}
	code, _, stderr = runCLI("train", "--pretrained", t.TempDir(), "--dataset", "sst2", "--limit", "16")
	if code == 0 || !strings.Contains(stderr, "config.json") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("an empty folder: exit %d, %q", code, stderr)
	}
}
