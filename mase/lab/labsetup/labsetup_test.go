package labsetup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScaleSettings(t *testing.T) {
	t.Setenv("GOMASE_QUICK", "")
	t.Setenv("GOMLX_BACKEND", "")
	t.Setenv("GOMASE_SCALE", "quick")
	if o := Options(); o.Dataset != "sst2" || o.Limit != 2000 || o.MaxLen != 64 {
		t.Errorf("quick options %+v", o)
	}
	if c := TrainConfig(); c.LogEvery != 10 || c.LearningRate != 1e-3 {
		t.Errorf("quick config %+v", c)
	}
	if o := SearchOptions(); o.Limit != QuickSweepSentences || o.EvalLimit != 400 || o.MaxLen != 32 {
		t.Errorf("quick search options %+v", o)
	}
	if o := SweepOptions(); o.Limit != QuickSweepSentences || o.MaxLen != 64 {
		t.Errorf("quick sweep options %+v", o)
	}
	t.Setenv("GOMASE_SCALE", "")
	if o := Options(); o.Dataset != "sst2" || o.Limit != StandardSentences || o.MaxLen != 64 {
		t.Errorf("standard options (the default on the Go backend) %+v", o)
	}
	if c := TrainConfig(); c.LogEvery != 50 {
		t.Errorf("standard config %+v", c)
	}
	if o := SweepOptions(); o.Dataset != "sst2" || o.Limit != SweepSentences || o.MaxLen != 64 {
		t.Errorf("standard sweep options %+v", o)
	}
	if o := SearchOptions(); o.Dataset != "sst2" || o.Limit != SweepSentences || o.EvalLimit != 0 || o.MaxLen != 32 {
		t.Errorf("standard search options %+v", o)
	}
	t.Setenv("GOMASE_SCALE", "full")
	if o := SearchOptions(); o.Dataset != "imdb" || o.Limit != 0 || o.EvalLimit != 0 || o.MaxLen != 512 {
		t.Errorf("full search options %+v", o)
	}
	if o := Options(); o.Dataset != "imdb" || o.Limit != 0 || o.MaxLen != 512 {
		t.Errorf("full options %+v", o)
	}
	if b := Batch(Options()); b.BatchSize != 8 || b.MaxLength != 512 || b.PadToMultipleOf != 32 {
		t.Errorf("batch %+v", b)
	}
}

func TestCheckpointPaths(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GOMASE_LABS_DIR", dir)
	t.Setenv("GOMASE_SCALE", "")
	t.Setenv("GOMASE_QUICK", "yes")
	base, err := Checkpoint("tutorial_3_qat")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "quick", "tutorial_3_qat"); base != want {
		t.Errorf("checkpoint %s, want %s", base, want)
	}
	for sc, want := range map[string]string{"standard": filepath.Join(dir, "standard", "x"), "full": filepath.Join(dir, "x")} {
		t.Setenv("GOMASE_SCALE", sc)
		if got, err := Checkpoint("x"); err != nil || got != want {
			t.Errorf("checkpoint at %s scale = %s, %v; want %s", sc, got, err, want)
		}
	}
	t.Setenv("GOMASE_SCALE", "")
	if Exists(base) {
		t.Error("Exists before any file")
	}
	for _, ext := range []string{".json", ".safetensors"} {
		if err := os.WriteFile(base+ext, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !Exists(base) {
		t.Error("Exists with both files")
	}
	// A lab started after Tutorial 2 picks up its checkpoint.
	lora, _ := Checkpoint("tutorial_2_lora")
	for _, ext := range []string{".json", ".safetensors"} {
		if err := os.WriteFile(lora+ext, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, origin, err := TrainedStart(nil)
	if err != nil || got != lora || !strings.Contains(origin, "tutorial_2_lora") {
		t.Errorf("TrainedStart = %s, %q, %v", got, origin, err)
	}
}

// TestStartModel: without the pretrained weights the labs start from the
// seeded bert-tiny with the from-scratch setting; with prajjwal1/bert-tiny
// in the HuggingFace cache they start from it with HF's setting.
func TestStartModel(t *testing.T) {
	t.Setenv("GOMASE_SCALE", "quick")
	t.Setenv("GOMASE_OFFLINE", "1")
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	m, cfg, note, err := StartModel()
	if err != nil || m == nil || cfg.LearningRate != 1e-3 || cfg.LogEvery != 10 || !strings.Contains(note, "seeded random initialisation") {
		t.Fatalf("without weights: %v, lr %g, log every %d, %q", err, cfg.LearningRate, cfg.LogEvery, note)
	}
	// A transformers-layout cache entry for prajjwal1/bert-tiny (the small
	// BertModel fixture of mase/pretrained stands in for the real weights).
	const commit = "0000000000000000000000000000000000000001"
	snap := filepath.Join(cache, "models--prajjwal1--bert-tiny", "snapshots", commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(cache, "models--prajjwal1--bert-tiny", "refs"), 0o755)
	os.WriteFile(filepath.Join(cache, "models--prajjwal1--bert-tiny", "refs", "main"), []byte(commit), 0o644)
	for _, f := range []string{"config.json", "pytorch_model.bin", "tokenizer.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "pretrained", "testdata", "base", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(snap, f), data, 0o644)
	}
	m, cfg, note, err = StartModel()
	if err != nil || m == nil || cfg.LearningRate != 5e-5 || cfg.WarmupRatio != 0 || cfg.Seed != Seed || !strings.Contains(note, "pretrained prajjwal1/bert-tiny") {
		t.Fatalf("with weights: %v, lr %g, warm-up %g, %q", err, cfg.LearningRate, cfg.WarmupRatio, note)
	}
}
