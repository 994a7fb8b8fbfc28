package labsetup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/lab/finetune"
)

// withPretrainedCache points the HuggingFace cache at an empty folder and,
// when present, puts a transformers-layout entry for prajjwal1/bert-tiny in
// it (mase/pretrained's small BertModel fixture stands in for the weights).
func withPretrainedCache(t *testing.T, present bool) {
	t.Helper()
	t.Setenv("GOMASE_OFFLINE", "1")
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	if !present {
		return
	}
	const commit = "0000000000000000000000000000000000000001"
	repo := filepath.Join(cache, "models--prajjwal1--bert-tiny")
	snap := filepath.Join(repo, "snapshots", commit)
	for _, d := range []string{snap, filepath.Join(repo, "refs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "pytorch_model.bin", "tokenizer.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "pretrained", "testdata", "base", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(snap, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeCheckpoint makes the two files Exists looks for.
func fakeCheckpoint(t *testing.T, name string) string {
	t.Helper()
	base, err := Checkpoint(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".json", ".safetensors"} {
		if err := os.WriteFile(base+ext, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

// TestStartSetsTheLearningRate: a pretrained start fine-tunes at MASE's
// 5e-5 without warm-up, a seeded one at 1e-3 with 10% warm-up.
func TestStartSetsTheLearningRate(t *testing.T) {
	t.Setenv("GOMASE_SCALE", "quick")
	p := Start{Pretrained: true}.Config()
	s := Start{}.Config()
	if p.LearningRate != 5e-5 || p.WarmupRatio != 0 || p.Seed != Seed || p.LogEvery != 10 {
		t.Errorf("after a pretrained start: %+v", p)
	}
	if s.LearningRate != 1e-3 || s.WarmupRatio != 0.1 || s.Seed != Seed {
		t.Errorf("after a seeded start: %+v", s)
	}
	pre, seeded := Start{Pretrained: true}, Start{}
	if pre.Kind() != "pretrained" || seeded.Kind() != "seeded" {
		t.Error("Kind")
	}
	if !strings.Contains(pre.Setting(), "5e-05 without warm-up") || !strings.Contains(seeded.Setting(), "0.001 with 10% warm-up") {
		t.Errorf("Setting: %q / %q", pre.Setting(), seeded.Setting())
	}
}

// TestStartOf: a record wins; Lab 2's model is always seeded; otherwise the
// start is the one Tutorial 2 takes, pretrained when the weights can be had.
func TestStartOf(t *testing.T) {
	t.Setenv("GOMASE_LABS_DIR", t.TempDir())
	t.Setenv("GOMASE_SCALE", "quick")
	lora := fakeCheckpoint(t, "tutorial_2_lora")
	withPretrainedCache(t, false)
	if p, how, err := StartOf(lora); err != nil || p || !strings.Contains(how, "when it can have them; here: starting from a seeded random initialisation") {
		t.Errorf("without weights: %v, %q, %v", p, how, err)
	}
	withPretrainedCache(t, true)
	if p, how, err := StartOf(lora); err != nil || !p || !strings.Contains(how, "when it can have them; here: starting from the pretrained") {
		t.Errorf("with weights: %v, %q, %v", p, how, err)
	}
	if err := RecordStart(lora, false, "starting from a seeded random initialisation (--pretrained off)"); err != nil {
		t.Fatal(err)
	}
	if p, how, err := StartOf(lora); err != nil || p || !strings.Contains(how, "recorded") {
		t.Errorf("recorded seeded: %v, %q, %v", p, how, err)
	}
	best := fakeCheckpoint(t, "tutorial_5_best_model")
	if p, how, err := StartOf(best); err != nil || p || !strings.Contains(how, "Lab 2") {
		t.Errorf("Lab 2's model: %v, %q, %v", p, how, err)
	}
	// FindStart takes the first checkpoint that exists.
	st, err := FindStart(nil, "tutorial_5_best_model")
	if err != nil || st.Checkpoint != best || st.Pretrained || st.TrainedNow || st.Origin != "Lab 2's tutorial_5_best_model" {
		t.Errorf("FindStart = %+v, %v", st, err)
	}
	st, err = FindStart(nil)
	if err != nil || st.Checkpoint != lora || st.Pretrained || st.TrainedNow || !strings.Contains(st.Origin, "Tutorial 2's tutorial_2_lora") {
		t.Errorf("FindStart without names = %+v, %v", st, err)
	}
}

func TestCache(t *testing.T) {
	t.Setenv("GOMASE_LABS_DIR", t.TempDir())
	t.Setenv("GOMASE_SCALE", "quick")
	c, err := OpenCache("lab9")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := Checkpoint("lab9_cache"); c.Dir != want {
		t.Errorf("cache folder %s, want %s", c.Dir, want)
	}
	var got map[string]float64
	if err := c.Load("baseline", &got); err == nil || !strings.Contains(err.Error(), "run the notebook's earlier cells") {
		t.Errorf("Load before Save: %v", err)
	}
	if err := c.Save("baseline", map[string]float64{"accuracy": 0.75}); err != nil {
		t.Fatal(err)
	}
	if err := c.Load("baseline", &got); err != nil || got["accuracy"] != 0.75 || !c.Has("baseline") {
		t.Errorf("Load = %v, %v", got, err)
	}
	if err := c.Reset(); err != nil || c.Has("baseline") {
		t.Errorf("Reset: %v, still there: %v", err, c.Has("baseline"))
	}
	if _, err := c.Session(SweepOptions()); err == nil || !strings.Contains(err.Error(), `no "start"`) {
		t.Errorf("Session before FindStart: %v", err)
	}
}

// TestCacheSplits: the second call reads the stored ids and gives the same
// batches as the tokenised data.
func TestCacheSplits(t *testing.T) {
	t.Setenv("GOMASE_LABS_DIR", t.TempDir())
	t.Setenv("GOMASE_SCALE", "quick")
	c, err := OpenCache("lab9")
	if err != nil {
		t.Fatal(err)
	}
	o := SweepOptions()
	o.Limit, o.EvalLimit = 64, 32
	tr1, te1, err := c.Splits(o)
	if err != nil {
		t.Skipf("no SST-2 data: %v", err)
	}
	tr2, te2, err := c.Splits(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]interface {
		Len() int
		IDs(int) []int32
	}{{tr1, tr2}, {te1, te2}} {
		if pair[0].Len() != pair[1].Len() || pair[0].Len() == 0 {
			t.Fatalf("lengths %d, %d", pair[0].Len(), pair[1].Len())
		}
		for i := range pair[0].Len() {
			if a, b := pair[0].IDs(i), pair[1].IDs(i); len(a) != len(b) || a[0] != b[0] || a[len(a)-1] != b[len(b)-1] {
				t.Fatalf("example %d: %v vs %v", i, a, b)
			}
		}
	}
	bo := Batch(o)
	var labels1, labels2 []int32
	for b, err := range tr1.Batches(bo) {
		if err != nil {
			t.Fatal(err)
		}
		labels1 = append(labels1, b.Labels...)
	}
	for b, err := range tr2.Batches(bo) {
		if err != nil {
			t.Fatal(err)
		}
		labels2 = append(labels2, b.Labels...)
	}
	if len(labels1) != len(labels2) {
		t.Fatalf("labels %d vs %d", len(labels1), len(labels2))
	}
	for i := range labels1 {
		if labels1[i] != labels2[i] {
			t.Fatalf("label %d: %d vs %d", i, labels1[i], labels2[i])
		}
	}
}

func TestRunSetting(t *testing.T) {
	o := finetune.Options{Dataset: "sst2", Limit: 1000, MaxLen: 64}
	if got, want := RunSetting(Start{}, o, 1000), "seeded start; SST-2, 1,000 training examples at 64 tokens"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	full := finetune.Options{Dataset: "imdb", MaxLen: 512}
	if got, want := RunSetting(Start{Pretrained: true}, full, 25000), "pretrained start; IMDb, 25,000 training examples at 512 tokens"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q", n, got)
		}
	}
}

func TestStartTraining(t *testing.T) {
	for sc, want := range map[string]string{
		"quick":    "SST-2, 2,000 training examples at 64 tokens",
		"standard": "SST-2, 4,000 training examples at 64 tokens",
		"full":     "IMDb, 25,000 training examples at 512 tokens",
	} {
		t.Setenv("GOMASE_SCALE", sc)
		if got := StartTraining(); got != want {
			t.Errorf("%s: StartTraining() = %q, want %q", sc, got, want)
		}
	}
}
