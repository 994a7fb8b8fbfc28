package pretrained

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/hub"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
	"github.com/gomlx/gomlx/core/tensors"
)

// The fixtures in testdata were written by make_fixtures.py with PyTorch.

type expectedLogits struct {
	InputIDs      [][]int32   `json:"input_ids"`
	AttentionMask [][]int32   `json:"attention_mask"`
	Logits        [][]float64 `json:"logits"`
}

func readExpected(t *testing.T, dir string) expectedLogits {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expectedLogits
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func flat(rows [][]int32) []int32 { return slices.Concat(rows...) }

// checkLogits runs m on the fixture's inputs and compares with PyTorch's
// logits.
func checkLogits(t *testing.T, m *nn.Model, fixture string, tol float64) {
	t.Helper()
	e := readExpected(t, fixture)
	mg, err := trace.NewMaseGraph(m, []string{"input_ids", "attention_mask"})
	if err != nil {
		t.Fatal(err)
	}
	b, l := len(e.InputIDs), len(e.InputIDs[0])
	out, err := execute.Run(mg, map[string]*tensors.Tensor{
		"input_ids":      tensors.FromFlatDataAndDimensions(flat(e.InputIDs), b, l),
		"attention_mask": tensors.FromFlatDataAndDimensions(flat(e.AttentionMask), b, l),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, o := range out {
			o.FinalizeAll()
		}
	}()
	got := tensors.MustCopyFlatData[float32](out[0])
	worst := 0.0
	for i, row := range e.Logits {
		for j, want := range row {
			worst = max(worst, math.Abs(float64(got[i*len(row)+j])-want))
		}
	}
	if worst > tol {
		t.Errorf("%s: logits %v differ from PyTorch's %v by up to %.3g (tolerance %g)", fixture, got, e.Logits, worst, tol)
	}
}

// copyFolder copies the named files of a fixture into a new folder.
func copyFolder(t *testing.T, from string, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func offline(t *testing.T) hub.Options {
	t.Setenv("HF_HUB_OFFLINE", "1")
	return hub.Options{CacheDir: t.TempDir()}
}

func TestLoadFolderSafetensorsAndBin(t *testing.T) {
	ho := offline(t)
	m, err := Load("testdata/cls", Options{Hub: ho})
	if err != nil {
		t.Fatal(err)
	}
	if m.Weights != "model.safetensors" || !slices.Equal(m.Labels, []string{"negative", "neutral", "positive"}) || m.Config.NumLabels != 3 {
		t.Errorf("weights %s, labels %v, num_labels %d", m.Weights, m.Labels, m.Config.NumLabels)
	}
	if w := m.Warnings(); len(w) != 0 {
		t.Errorf("a complete checkpoint warns: %q", w)
	}
	if m.Tokenizer == nil {
		t.Fatalf("no tokenizer: %s", m.TokenizerNote)
	}
	if ids := m.Tokenizer.Encode("The movie was very GOOD."); !slices.Equal(ids, []int32{3, 6, 8, 10, 17, 12, 21, 4}) {
		t.Errorf("tokenizer ids %v", ids)
	}
	checkLogits(t, m.Model, "testdata/cls", 1e-6)

	bin := copyFolder(t, "testdata/cls", "config.json", "pytorch_model.bin")
	m, err = Load(bin, Options{Hub: ho})
	if err != nil {
		t.Fatal(err)
	}
	if m.Weights != "pytorch_model.bin" || m.Tokenizer != nil || m.TokenizerNote == "" {
		t.Errorf("weights %s, tokenizer %v (%s)", m.Weights, m.Tokenizer, m.TokenizerNote)
	}
	checkLogits(t, m.Model, "testdata/cls", 1e-6)
}

func TestLoadHalfAndShardedBFloat16(t *testing.T) {
	ho := offline(t)
	for _, fixture := range []string{"testdata/cls-fp16", "testdata/cls-bf16-sharded"} {
		m, err := Load(fixture, Options{Hub: ho})
		if err != nil {
			t.Fatal(err)
		}
		checkLogits(t, m.Model, fixture, 1e-6)
	}
}

// TestLoadBaseCheckpoint: a checkpoint without a classifier (BertModel
// names, an MLM head whose decoder shares the embeddings' storage, a
// strided pooler weight) loads into the classifier with transformers'
// warnings; the tokenizer comes from tokenizer.json.
func TestLoadBaseCheckpoint(t *testing.T) {
	m, err := Load("testdata/base", Options{Hub: offline(t), NumLabels: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(m.Warnings(), "\n")
	for _, want := range []string{"were not used when initializing BertForSequenceClassification: ['cls.predictions.bias', 'cls.predictions.decoder.weight']",
		"newly initialized: ['classifier.weight', 'classifier.bias']", "You should probably TRAIN this model"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	if m.Report.Prefix != "bert" || m.Config.NumLabels != 2 || m.Labels != nil {
		t.Errorf("prefix %q, num_labels %d, labels %v", m.Report.Prefix, m.Config.NumLabels, m.Labels)
	}
	if m.Tokenizer == nil || !slices.Equal(m.Tokenizer.Encode("boring acting!"), []int32{3, 31, 26, 22, 4}) {
		t.Errorf("tokenizer from tokenizer.json: %v (%s)", m.Tokenizer, m.TokenizerNote)
	}
	raw, err := os.ReadFile("testdata/base/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	json.Unmarshal(raw, &e)
	params := map[string][]float32{}
	for _, p := range m.Model.Parameters() {
		v, _, err := m.Model.ParamValues(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		params[p.Name] = v
	}
	pw := params["bert.pooler.dense.weight"]
	for i, want := range e["pooler.dense.weight[0][:4]"].([]any) {
		if got := float64(pw[i]); math.Abs(got-want.(float64)) > 1e-7 {
			t.Errorf("pooler weight [0][%d] = %v, want %v", i, got, want)
		}
	}
	for i, want := range e["pooler.dense.weight[:4][0]"].([]any) {
		if got := float64(pw[i*32]); math.Abs(got-want.(float64)) > 1e-7 {
			t.Errorf("pooler weight [%d][0] = %v, want %v", i, got, want)
		}
	}
	sum := 0.0
	for _, v := range params["bert.embeddings.word_embeddings.weight"] {
		sum += float64(v)
	}
	if want := e["word_embeddings_sum"].(float64); math.Abs(sum-want) > 1e-4 {
		t.Errorf("word embeddings sum %v, want %v", sum, want)
	}
}

// hubServer serves a fixture folder as HuggingFace repository repo.
func hubServer(t *testing.T, repo, folder string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var requests atomic.Int32
	const commit = "0123456789abcdef0123456789abcdef01234567"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		prefix := "/" + repo + "/resolve/main/"
		if !strings.HasPrefix(r.URL.Path, prefix) {
			w.Header().Set("X-Error-Code", "RepoNotFound")
			http.Error(w, "Repository not found", http.StatusNotFound)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, prefix)
		data, err := os.ReadFile(filepath.Join(folder, filepath.FromSlash(name)))
		if err != nil || name == "expected.json" {
			w.Header().Set("X-Repo-Commit", commit)
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		w.Header().Set("X-Repo-Commit", commit)
		w.Header().Set("ETag", fmt.Sprintf("%q", fmt.Sprintf("etag-%x", len(data))+strings.ReplaceAll(name, ".", "-")))
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// TestDownloadThenOffline: a repository downloaded from a hub lands in the
// HuggingFace cache layout and loads again with the network off.
func TestDownloadThenOffline(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("GOMASE_OFFLINE", "")
	srv, requests := hubServer(t, "test-org/tiny-bert", "testdata/cls")
	cache := t.TempDir()
	ho := hub.Options{Endpoint: srv.URL, CacheDir: cache}
	m, err := Load("test-org/tiny-bert", Options{Hub: ho})
	if err != nil {
		t.Fatal(err)
	}
	checkLogits(t, m.Model, "testdata/cls", 1e-6)
	snap, err := filepath.Glob(filepath.Join(cache, "models--test-org--tiny-bert", "snapshots", "*", "model.safetensors"))
	if err != nil || len(snap) != 1 {
		t.Fatalf("no cached model.safetensors in the snapshot layout: %v %v", snap, err)
	}
	srv.Close()
	before := requests.Load()
	ho.Offline = true
	m, err = Load("test-org/tiny-bert", Options{Hub: ho})
	if err != nil {
		t.Fatalf("second load, offline: %v", err)
	}
	checkLogits(t, m.Model, "testdata/cls", 1e-6)
	if requests.Load() != before {
		t.Error("the offline load made requests")
	}
}

// TestHFCacheOffline: weights a user downloaded with Python (the
// transformers cache layout: blobs, snapshot symlinks, refs/main) are found
// with the network off, and "auto" uses them.
func TestHFCacheOffline(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	repo := filepath.Join(cache, "models--prajjwal1--bert-tiny")
	const commit = "6f75de8b60a9f8a2fdf7b69cbd86d9e64bcb3837"
	for _, d := range []string{"blobs", "refs", "snapshots/" + commit} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644)
	for i, f := range []string{"config.json", "pytorch_model.bin", "vocab.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata/cls", f))
		if err != nil {
			t.Fatal(err)
		}
		blob := fmt.Sprintf("%040x", i+1)
		os.WriteFile(filepath.Join(repo, "blobs", blob), data, 0o644)
		if err := os.Symlink(filepath.Join("..", "..", "blobs", blob), filepath.Join(repo, "snapshots", commit, f)); err != nil {
			t.Fatal(err)
		}
	}
	m, note, err := Start(Auto, Options{})
	if err != nil || m == nil {
		t.Fatalf("auto with the cache: %v, %v (%s)", m, err, note)
	}
	if !strings.Contains(note, "pretrained prajjwal1/bert-tiny (pytorch_model.bin)") {
		t.Errorf("note %q", note)
	}
	checkLogits(t, m.Model, "testdata/cls", 1e-6)

	t.Setenv("HF_HUB_CACHE", t.TempDir())
	m, note, err = Start(Auto, Options{})
	if err != nil || m != nil || !strings.Contains(note, "seeded random initialisation: the pretrained prajjwal1/bert-tiny could not be had (offline") {
		t.Errorf("auto without the cache: %v, %v, %q", m, err, note)
	}
	if m, note, err := Start(Off, Options{}); m != nil || err != nil || !strings.Contains(note, "seeded random initialisation") {
		t.Errorf("off: %v %v %q", m, err, note)
	}
	if _, _, err := Start("prajjwal1/bert-tiny", Options{}); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("an explicit id that cannot load: %v, want an error naming what was tried", err)
	}
}

func TestLoadBadInput(t *testing.T) {
	ho := offline(t)
	write := func(files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		}
		return dir
	}
	cfg, _ := os.ReadFile("testdata/cls/config.json")
	for _, c := range []struct {
		name, dir, want string
	}{
		{"gpt2", write(map[string]string{"config.json": `{"model_type": "gpt2"}`}), `model_type "gpt2" is not supported`},
		{"relu", write(map[string]string{"config.json": `{"model_type": "bert", "hidden_act": "relu"}`}), `hidden_act "relu" is not supported (allowed: gelu)`},
		{"not json", write(map[string]string{"config.json": `model_type: bert`}), "config.json: not JSON: invalid character 'm'"},
		{"no weights", write(map[string]string{"config.json": string(cfg)}), "has no weights: none of model.safetensors"},
		{"garbage bin", write(map[string]string{"config.json": string(cfg), "pytorch_model.bin": "<html>404</html>"}), "not a zip archive"},
		{"truncated safetensors", write(map[string]string{"config.json": string(cfg), "model.safetensors": "\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":"}), "safetensors"},
		{"no config", t.TempDir(), "config.json"},
	} {
		if m, err := Load(c.dir, Options{Hub: ho}); err == nil || m != nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", c.name, err, c.want)
		}
	}
	// A shape that does not fit: the checkpoint's hidden size disagrees with the config.
	bad := copyFolder(t, "testdata/cls", "model.safetensors")
	var c map[string]any
	json.Unmarshal(cfg, &c)
	c["hidden_size"], c["num_attention_heads"] = 64, 4
	raw, _ := json.Marshal(c)
	os.WriteFile(filepath.Join(bad, "config.json"), raw, 0o644)
	if _, err := Load(bad, Options{Hub: ho}); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("mismatched shapes: %v", err)
	}
	// An unknown repository on a hub.
	t.Setenv("HF_HUB_OFFLINE", "")
	srv, _ := hubServer(t, "test-org/tiny-bert", "testdata/cls")
	if _, err := Load("test-org/missing", Options{Hub: hub.Options{Endpoint: srv.URL, CacheDir: t.TempDir()}}); err == nil || !strings.Contains(err.Error(), "test-org/missing") {
		t.Errorf("unknown repository: %v", err)
	}
}

func TestParseConfigLabels(t *testing.T) {
	cfg, labels, err := ParseConfig([]byte(`{"architectures": ["BertForMaskedLM"], "num_labels": 5, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "num_hidden_layers": 1}`), 0)
	if err != nil || cfg.NumLabels != 5 || labels != nil || cfg.VocabSize != 30522 || cfg.LayerNormEps != 1e-12 {
		t.Errorf("config %+v, labels %v, %v", cfg, labels, err)
	}
	if cfg, _, err := ParseConfig([]byte(`{"model_type": "bert", "id2label": {"0": "a", "1": "b", "2": "c"}}`), 2); err != nil || cfg.NumLabels != 2 {
		t.Errorf("num_labels override: %+v %v", cfg, err)
	}
	if _, _, err := ParseConfig([]byte(`{"model_type": "bert", "id2label": {"0": "a", "5": "b"}}`), 0); err == nil || !strings.Contains(err.Error(), `id2label key "5"`) {
		t.Errorf("bad id2label: %v", err)
	}
}

// TestAutoWithoutNetwork: "auto" falls back when the hub's host cannot be
// resolved, and says so in one line.
func TestAutoWithoutNetwork(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("GOMASE_OFFLINE", "")
	m, note, err := Start(Auto, Options{Hub: hub.Options{Endpoint: "http://hub.gomase-test.invalid", CacheDir: t.TempDir()}})
	if err != nil || m != nil || !strings.Contains(note, "hub.gomase-test.invalid cannot be resolved") || strings.Contains(note, "\n") {
		t.Errorf("auto without network: %v, %v, %q", m, err, note)
	}
}

// TestBadCachedFiles: a cached file that does not read (an older cache, a
// file edited by hand, an HTML page cached by an older gomase) is named in
// the error, with how to clear it, whether the load fails (config.json) or
// only the tokenizer is left out (TokenizerNote).
func TestBadCachedFiles(t *testing.T) {
	const commit = "6f75de8b60a9f8a2fdf7b69cbd86d9e64bcb3837"
	html := "<!DOCTYPE html><html><body>Sign in to the network</body></html>"
	for _, c := range []struct {
		name, file, body string
		loads            bool // the model loads and TokenizerNote says it
	}{
		{"HTML config.json", "config.json", html, false},
		{"truncated config.json", "config.json", `{"model_type": "bert", "hidden_si`, false},
		{"HTML tokenizer_config.json", "tokenizer_config.json", html, true},
		{"HTML vocab.txt", "vocab.txt", html, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cache := t.TempDir()
			t.Setenv("HF_HUB_OFFLINE", "1")
			repo := filepath.Join(cache, "models--test-org--bad")
			for _, d := range []string{"blobs", "refs", "snapshots/" + commit} {
				if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644)
			for i, f := range []string{"config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"} {
				data, err := os.ReadFile(filepath.Join("testdata/cls", f))
				if err != nil {
					t.Fatal(err)
				}
				if f == c.file {
					data = []byte(c.body)
				}
				blob := fmt.Sprintf("%040x", i+1)
				os.WriteFile(filepath.Join(repo, "blobs", blob), data, 0o644)
				if err := os.Symlink(filepath.Join("..", "..", "blobs", blob), filepath.Join(repo, "snapshots", commit, f)); err != nil {
					t.Fatal(err)
				}
			}
			m, err := Load("test-org/bad", Options{Hub: hub.Options{CacheDir: cache}})
			msg := ""
			switch {
			case c.loads && err != nil:
				t.Fatalf("the model must load without its tokenizer: %v", err)
			case c.loads:
				if m.Tokenizer != nil {
					t.Errorf("a tokenizer was built from the bad %s", c.file)
				}
				msg = m.TokenizerNote
			case err == nil:
				t.Fatalf("a bad %s loaded", c.file)
			default:
				msg = err.Error()
			}
			for _, want := range []string{filepath.Join(repo, "snapshots", commit, c.file), "remove", repo} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("%q spans lines", msg)
			}
		})
	}
}

// smallConfig is a valid BERT config.json with the given fields replaced
// (raw JSON values).
func smallConfig(t testing.TB, fields map[string]string) []byte {
	t.Helper()
	c := map[string]json.RawMessage{
		"model_type": []byte(`"bert"`), "hidden_size": []byte("32"), "num_attention_heads": []byte("4"),
		"intermediate_size": []byte("64"), "num_hidden_layers": []byte("2"), "vocab_size": []byte("40"),
		"max_position_embeddings": []byte("64"), "num_labels": []byte("3"),
	}
	for k, v := range fields {
		c[k] = json.RawMessage(v)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestParseConfigBounds: config.json is validated as transformers and
// PyTorch would, before anything is allocated; the error names the field,
// the value and what is allowed. Before the fix, sizes of 10^9–10^12 passed
// (and the build grew until it died) and dropout 5.0 or −1.0 trained.
func TestParseConfigBounds(t *testing.T) {
	for _, c := range []struct {
		name   string
		fields map[string]string
		want   string
	}{
		{"valid", nil, ""},
		{"largest dropout", map[string]string{"hidden_dropout_prob": "0.999", "attention_probs_dropout_prob": "0"}, ""},
		{"hidden_size 1e12", map[string]string{"hidden_size": "1000000000000"}, "config.json: bert config: hidden_size 1000000000000 is out of range (allowed: 1 to 65536)"},
		{"hidden_size 0", map[string]string{"hidden_size": "0"}, "hidden_size 0 is out of range (allowed: 1 to 65536)"},
		{"vocab_size 1e9", map[string]string{"vocab_size": "1000000000"}, "vocab_size 1000000000 is out of range (allowed: 1 to 2097152)"},
		{"intermediate_size 1e11", map[string]string{"intermediate_size": "100000000000"}, "intermediate_size 100000000000 is out of range (allowed: 1 to 262144)"},
		{"num_hidden_layers 1e9", map[string]string{"num_hidden_layers": "1000000000"}, "num_hidden_layers 1000000000 is out of range (allowed: 1 to 256)"},
		{"num_attention_heads 1e6", map[string]string{"num_attention_heads": "1000000"}, "num_attention_heads 1000000 is out of range (allowed: 1 to 1024)"},
		{"max_position_embeddings 1e9", map[string]string{"max_position_embeddings": "1000000000"}, "max_position_embeddings 1000000000 is out of range (allowed: 1 to 131072)"},
		{"type_vocab_size 1e9", map[string]string{"type_vocab_size": "1000000000"}, "type_vocab_size 1000000000 is out of range (allowed: 1 to 1024)"},
		{"num_labels 1e7", map[string]string{"num_labels": "10000000"}, "num_labels 10000000 is out of range (allowed: 1 to 1048576)"},
		{"num_labels -1", map[string]string{"num_labels": "-1"}, "num_labels -1 is out of range"},
		{"heads do not divide", map[string]string{"hidden_size": "30"}, "hidden_size 30 is not a multiple of num_attention_heads 4"},
		{"every size at its bound", map[string]string{"hidden_size": "65536", "num_attention_heads": "1024", "intermediate_size": "262144",
			"num_hidden_layers": "256", "vocab_size": "2097152"}, "more than the 8 GiB a model may take (limits.MaxModelBytes)"},
		{"hidden_dropout_prob 5.0", map[string]string{"hidden_dropout_prob": "5.0"}, "hidden_dropout_prob 5 is not a dropout probability (allowed: 0 ≤ p < 1)"},
		{"hidden_dropout_prob -1.0", map[string]string{"hidden_dropout_prob": "-1.0"}, "hidden_dropout_prob -1 is not a dropout probability (allowed: 0 ≤ p < 1)"},
		{"attention_probs_dropout_prob 1", map[string]string{"attention_probs_dropout_prob": "1"}, "attention_probs_dropout_prob 1 is not a dropout probability"},
		{"layer_norm_eps 0", map[string]string{"layer_norm_eps": "0"}, "layer_norm_eps 0 is out of range (allowed: a finite number above 0)"},
		{"layer_norm_eps -1e-12", map[string]string{"layer_norm_eps": "-1e-12"}, "layer_norm_eps -1e-12 is out of range"},
		{"layer_norm_eps 1e400", map[string]string{"layer_norm_eps": "1e400"}, "config.json is not a transformers config"},
		{"initializer_range -0.02", map[string]string{"initializer_range": "-0.02"}, "initializer_range -0.02 is out of range (allowed: a finite number, 0 or more)"},
		{"hidden_size 1e12 as a float", map[string]string{"hidden_size": "1e12"}, "config.json is not a transformers config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, _, err := ParseConfig(smallConfig(t, c.fields), 0)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := cfg.Validate(); err != nil {
					t.Fatalf("ParseConfig returned a config Validate refuses: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, c.want)
			}
		})
	}
}
