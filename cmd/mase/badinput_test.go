package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/datadir"
)

// badInputFiles writes the hostile files the bad-input table points the
// commands at and returns their folder.
func badInputFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) { writeTestFile(t, dir, name, body) }
	write("notes.txt", "a text file\nwithout a final newline")
	write("hub/model.safetensors", "\x10\x00\x00\x00\x00\x00\x00\x00{\"__metadata__\":{}}")
	if err := os.MkdirAll(filepath.Join(dir, "ckpt.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("config-like.json", `{"model_type": "bert", "hidden_size": 128}`+"\n")
	write("garbage.safetensors", "\x00\x01\x02 not a safetensors file")
	write("garbage.json", "{ not json")
	write("html/config.json", "<!DOCTYPE html><html><body>Sign in</body></html>")
	write("huge/config.json", `{"model_type": "bert", "hidden_size": 1000000000000, "num_attention_heads": 2, "intermediate_size": 512, "num_hidden_layers": 2, "vocab_size": 30522}`)
	write("dropout/config.json", `{"model_type": "bert", "hidden_size": 128, "num_attention_heads": 2, "intermediate_size": 512, "num_hidden_layers": 2, "vocab_size": 30522, "hidden_dropout_prob": 5.0}`)
	write("novocab/README", "a data folder without bert-base-uncased/vocab.txt")
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.safetensors")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, folder := range []string{"folder.svg", "folder.vcd"} {
		if err := os.Mkdir(filepath.Join(dir, folder), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Checkpoints written before checksums (version 1): one as exported,
	// one whose layer 0 calls layer 1's query projection.
	v1, err := filepath.Abs(filepath.Join("..", "..", "mase", "checkpoint", "testdata", "v1", "bert_small"))
	if err != nil {
		t.Fatal(err)
	}
	v1JSON, err := os.ReadFile(v1 + ".json")
	if err != nil {
		t.Fatal(err)
	}
	const query0, query1 = `"target":"bert.encoder.layer.0.attention.self.query"`, `"target":"bert.encoder.layer.1.attention.self.query"`
	if !bytes.Contains(v1JSON, []byte(query0)) {
		t.Fatalf("%s.json lacks %s", v1, query0)
	}
	for name, body := range map[string][]byte{"v1": v1JSON, "v1-rewired": bytes.Replace(v1JSON, []byte(query0), []byte(query1), 1)} {
		write(name+".json", string(body))
		if err := os.Symlink(v1+".safetensors", filepath.Join(dir, name+".safetensors")); err != nil {
			t.Fatal(err)
		}
	}
	// design.json files: a valid small design, and the same doctored.
	design := `{"top":"top","input":{"node":"fc1","format":{"Width":%d,"Frac":3},"size":2,"par0":2,"par1":1},` +
		`"output":{"node":"fc1","format":{"Width":8,"Frac":3},"size":%s,"par0":1,"par1":1},` +
		`"layers":[{"node":"fc1","op":"linear","module":"fixed_linear","in":{"Width":%d,"Frac":3},"out":{"Width":8,"Frac":3},` +
		`"in_size":2,"out_size":%s,"weight_format":{"Width":8,"Frac":4},"weight":[[1,2]],"bias_format":{"Width":8,"Frac":4},"bias":[0],"params":[]}],` +
		`"top_params":[],"sources":["top.sv"],"testbench":"top_tb.sv","roms":[]}`
	write("design-ok/design.json", fmt.Sprintf(design, 8, "1", 8, "1"))
	write("design-width64/design.json", fmt.Sprintf(design, 64, "1", 64, "1"))
	write("design-huge/design.json", fmt.Sprintf(design, 8, "1", 8, "10000000000"))
	if err := os.Mkdir(filepath.Join(dir, "design-fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "design-fifo", "design.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBadInputsThroughTheBinary drives bad inputs through the mase binary
// (this test binary re-executed as mase, a process of its own): each must
// end with a non-zero exit, a one-line error that contains what the table
// says, within seconds, and never a Go panic, fatal error or stack trace.
// Files the commands were pointed at are left as they were.
func TestBadInputsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary many times")
	}
	d := badInputFiles(t)
	f := func(name string) string { return filepath.Join(d, name) }
	cases := []struct {
		args []string
		want string
	}{
		// Commands, flags and arguments.
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"train", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"train", "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"train", "--epochs", "many"}, `invalid value "many" for flag -epochs`},
		{[]string{"train", "--epochs", "0"}, "num_train_epochs 0 is out of range"},
		{[]string{"train", "--epochs", "1000000000000", "--dataset", "sst2", "--limit", "8"}, "num_train_epochs 1000000000000 is out of range (allowed: 1 to 1048576)"},
		{[]string{"train", "--batch-size", "0"}, "batch size 0 is out of range"},
		{[]string{"train", "--batch-size", "1000000000", "--dataset", "sst2", "--limit", "8"}, "batch size 1000000000 is out of range (allowed: 1 to 65536)"},
		{[]string{"train", "--max-len", "1"}, "--max-len"},
		// Ids past the embedding tables are refused before any training (they used to be clamped and trained on).
		{[]string{"train", "--dataset", "sst2", "--limit", "8", "--max-len", "513"}, "max length 513 is longer than the model's 512 position embeddings"},
		{[]string{"train", "--dataset", "sst2", "--limit", "8", "--max-len", "100000"}, "allowed: a max length of 2 to 512"},
		{[]string{"train", "--limit", "-5"}, "must be ≥ 0"},
		{[]string{"train", "--dataset", "mnist"}, `unknown dataset "mnist"`},
		{[]string{"train", "--model", "gpt2", "--dataset", "sst2"}, "bert-tiny"},
		{[]string{"train", "--trainer", "turbo", "--dataset", "sst2"}, "turbo"},
		{[]string{"train", "--lora-rank", "1000000000", "--dataset", "sst2", "--limit", "8"}, "lora rank 1000000000 is out of range (allowed: 1 to 65536)"},
		{[]string{"train", "--lora-rank", "-1"}, "must be ≥ 0"},
		// Numbers: NaN, infinities, out of range.
		{[]string{"train", "--warmup", "NaN"}, `invalid value "NaN" for flag -warmup`},
		{[]string{"train", "--warmup", "-0.1"}, `invalid value "-0.1" for flag -warmup`},
		{[]string{"train", "--lr", "Inf"}, `invalid value "Inf" for flag -lr`},
		{[]string{"train", "--lr", "-1e-3"}, `invalid value "-1e-3" for flag -lr`},
		{[]string{"train", "--lora-alpha", "NaN"}, `invalid value "NaN" for flag -lora-alpha`},
		{[]string{"compress", "width", "--lr", "NaN"}, `invalid value "NaN" for flag -lr`},
		{[]string{"compress", "sparsity", "--sparsities", "NaN"}, `--sparsities: "NaN" is not a number in [0, 1]`},
		{[]string{"compress", "sparsity", "--sparsities", "1.5"}, `--sparsities: "1.5" is not a number in [0, 1]`},
		{[]string{"compress", "width", "--widths", "0"}, "width 0 out of range (allowed: 2..32)"},
		{[]string{"compress", "width", "--widths", "99999999999999999999"}, "--widths"},
		{[]string{"compress", "shrink"}, "shrink"},
		// Its training's working memory is checked before the data loads.
		{[]string{"compress", "width", "--max-len", "512", "--eval-batch-size", "65536"}, "batch size 8 --max-len 512 --eval-batch-size 65536 needs about"},
		{[]string{"search", "--space", "mixed-precision", "--lambda", "NaN"}, `invalid value "NaN" for flag -lambda`},
		{[]string{"search", "--space", "toy", "--timeout", "-5s"}, `invalid value "-5s" for flag -timeout`},
		{[]string{"search", "--space", "toy", "--toy-sleep", "-1s"}, `invalid value "-1s" for flag -toy-sleep`},
		{[]string{"search", "--space", "toy", "--heartbeat", "-1m"}, `invalid value "-1m" for flag -heartbeat`},
		{[]string{"search", "--space", "toy", "--trials", "0"}, "--trials must be ≥ 1"},
		{[]string{"search", "--space", "moon"}, `unknown --space "moon"`},
		{[]string{"search", "--space", "nas", "--hidden-sizes", "100000000", "--num-heads", "2"}, "hidden_size 100000000 is out of range (allowed: 1 to 65536)"},
		{[]string{"search", "--space", "nas", "--num-layers", "1000000000"}, "out of range"},
		{[]string{"search", "--space", "nas", "--num-layers", "200", "--hidden-sizes", "4096", "--intermediate-sizes", "16384", "--num-heads", "16"}, "the largest model of the space"},
		// The largest trial's activations, at the data's own longest example, are checked before the first trial.
		{[]string{"search", "--space", "nas", "--num-layers", "4", "--num-heads", "1024", "--hidden-sizes", "1024", "--intermediate-sizes", "64",
			"--dataset", "imdb-sample", "--max-len", "512", "--limit", "16", "--eval-limit", "16"}, "nas: the space's largest trial (4 layers, hidden 1024, intermediate 64, 1024 heads) at batch size 8, the longest example's tokens 512 needs about"},
		{[]string{"emit", "--negative-slope", "NaN", "--out", d}, `invalid value "NaN" for flag -negative-slope`},
		{[]string{"emit", "--model", "mlp", "--width", "0", "--out", f("rtl")}, "width"},
		{[]string{"labs", "--timeout", "-1s"}, `invalid value "-1s" for flag -timeout`},
		{[]string{"labs", "--scale", "huge"}, "--scale huge"},
		{[]string{"quant", "--format", "integer", "--width", "8", "--frac-width", "4", "NaN"}, "not finite"},
		{[]string{"quant", "--format", "nosuch", "1"}, "nosuch"},
		{[]string{"tokenize", "--max-len", "1", "hello"}, "--max-len"},
		{[]string{"profile", "--mode", "lazy"}, `--mode "lazy": allowed are eager and compiled`},
		{[]string{"profile", "--batch", "0"}, "--batch must be 1..4096"},
		{[]string{"profile", "--runs", "0"}, "--runs must be 1..10000"},
		{[]string{"profile", "--model", "gpt"}, `unknown --model "gpt"`},
		{[]string{"profile", "--trace", f("notes.txt")}, "is not a trace mase profile wrote; refusing to overwrite it"},
		{[]string{"profile", "--trace", d}, "not a regular file"},
		{[]string{"tokenize", "--data-dir", f("novocab"), "hello"}, "vocab"},
		// Benchmark sizes.
		{[]string{"bench", "sdpa", "--shape", "100000,8,128,64"}, "more than the 8 GiB one computation may take"},
		{[]string{"bench", "sdpa", "--shape", "9223372036854775807,2,2,2"}, "more than the 8 GiB one computation may take"},
		{[]string{"bench", "sdpa", "--shape", "1,2,3"}, "--shape must be four positive sizes"},
		{[]string{"bench", "sdpa", "--shape", "0,8,128,64"}, "--shape must be four positive sizes"},
		{[]string{"bench", "sdpa", "--dtype", "int8"}, `unknown --dtype "int8"`},
		{[]string{"bench", "mxint8", "--values", "1000000000000"}, "more than the 8 GiB one computation may take"},
		{[]string{"bench", "mxint8", "--group-size", "48"}, "48"},
		{[]string{"bench", "compile", "--model", "gpt2"}, "gpt2"},
		{[]string{"bench", "compile", "--backend", "xla:cpu"}, "xla:cpu"},
		{[]string{"bench", "teleport"}, "teleport"},
		// Output paths, before any work.
		{[]string{"compress", "width", "--plot", f("chart.png")}, "unsupported file extension (allowed: .svg)"},
		{[]string{"compress", "width", "--plot", f("missing/chart.svg")}, "no folder"},
		{[]string{"search", "--space", "toy", "--plot", f("folder.svg")}, "is a folder"},
		{[]string{"graph", "--model", "mlp", "--draw", f("g.pdf")}, "unsupported file extension (allowed: .svg, .html, .dot)"},
		{[]string{"train", "--out", f("missing/ckpt")}, "no folder"},
		// Both files of the checkpoint are checked before training (a folder at ckpt.json used to fail after it),
		// and a file Export did not write is never replaced.
		{[]string{"train", "--dataset", "sst2", "--limit", "8", "--out", f("ckpt")}, "ckpt.json is a folder or special file"},
		{[]string{"train", "--dataset", "sst2", "--limit", "8", "--out", f("hub/model")}, "model.safetensors exists and is not a parameters file gomase wrote: refusing to overwrite it"},
		// Files that are not what a flag wants.
		{[]string{"search", "--space", "toy", "--storage", f("notes.txt")}, "not"},
		{[]string{"search", "--space", "toy", "--storage", f("config-like.json")}, "not"},
		{[]string{"search", "--space", "toy", "--storage", f("garbage.safetensors")}, "not"},
		{[]string{"search", "--space", "toy", "--storage", f("fifo.jsonl")}, "not a regular file"},
		{[]string{"search", "import", "--storage", f("new.jsonl"), f("garbage.json")}, "garbage.json"},
		{[]string{"search", "export", "--format", "optuna-journal", "--storage", f("notes.txt"), "--study", "s", f("out.log")}, "not"},
		{[]string{"search", "--space", "mixed-precision", "--checkpoint", f("garbage"), "--quick"}, "garbage"},
		{[]string{"search", "--space", "mixed-precision", "--checkpoint", f("zero"), "--quick"}, "zero"},
		{[]string{"compress", "width", "--checkpoint", f("zero")}, "zero"},
		// A checkpoint without a checksum is refused unless the user accepts it unverified; then validation
		// still finds a graph rewired to other modules (both used to import and train, exit 0).
		{[]string{"compress", "width", "--checkpoint", f("v1")}, "is a version 1 file, written before checksums, so it cannot be verified (allowed: a sealed version 2 file; to import this one unverified, use --accept-unsealed"},
		{[]string{"search", "--space", "mixed-precision", "--checkpoint", f("v1"), "--quick"}, "is a version 1 file, written before checksums, so it cannot be verified"},
		{[]string{"compress", "width", "--checkpoint", f("v1-rewired"), "--accept-unsealed"}, "the graph calls module bert.encoder.layer.1.attention.self.query 2 times where model BertForSequenceClassification calls it once"},
		{[]string{"train", "--pretrained", f("html"), "--dataset", "sst2", "--limit", "8"}, "config.json"},
		{[]string{"train", "--pretrained", f("huge"), "--dataset", "sst2", "--limit", "8"}, "hidden_size 1000000000000 is out of range (allowed: 1 to 65536)"},
		{[]string{"train", "--pretrained", f("dropout"), "--dataset", "sst2", "--limit", "8"}, "hidden_dropout_prob 5 is not a dropout probability"},
		{[]string{"train", "--pretrained", f("no-such-folder"), "--dataset", "sst2", "--limit", "8"}, "no-such-folder"},
		{[]string{"sim", f("no-such-design")}, "no-such-design"},
		// A doctored design.json is refused by what is wrong (it used to panic or run out of memory).
		{[]string{"sim", f("design-width64")}, "format Q(64,3) (allowed: width 1 to 32"},
		{[]string{"sim", f("design-huge")}, "out_size 10000000000 is out of range"},
		{[]string{"sim", f("design-fifo")}, "named pipe (FIFO), not a regular file"},
		{[]string{"sim", f("design-ok"), "--vectors", "2000000000"}, "2000000000 vectors (allowed: 1 to 1048576)"},
		// A waveform path that is a folder used to be printed as written, and nothing was.
		{[]string{"sim", f("design-ok"), "--wave", f("folder.vcd")}, "is a folder or special file (allowed: a file to write)"},
	}
	if len(cases) < 60 {
		t.Fatalf("only %d bad inputs", len(cases))
	}
	before := snapshot(t, d)
	env := []string{"GOMASE_DATA_DIR=" + dataDirForTests(t)}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, msg := badRun(t, d, 60*time.Second, env, nil, c.args...)
			wantRefusal(t, code, msg, c.want)
		})
	}
	if after := snapshot(t, d); after != before {
		t.Errorf("the files the commands were given changed:\nbefore %s\nafter  %s", before, after)
	}
}

// writeTestFile writes body to name under dir, making its folders.
func writeTestFile(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// badRun runs this test binary as mase (a process of its own) with args in
// dir, with env added and prefix (such as prlimit and its flags) run in
// front of it, and returns its exit code, stdout and trimmed stderr. A Go
// crash, a Python traceback or a run past timeout (the check came after
// long work, or it waits) fails t.
func badRun(t *testing.T, dir string, timeout time.Duration, env, prefix []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append(append(slices.Clone(prefix), os.Args[0]), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "GOMASE_RUN_AS_MASE=1"), env...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	msg := strings.TrimSpace(errOut.String())
	for _, crash := range []string{"panic:", "fatal error:", "goroutine ", "SIGSEGV", "runtime error", "out of memory", "Traceback"} {
		if strings.Contains(msg, crash) || strings.Contains(out.String(), crash) {
			t.Fatalf("a crash (%q) after %v:\n%.3000s", crash, took, msg)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("still running after %v (it waits, or the check comes after long work): %.500s", took, msg)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), msg
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), msg
	}
	t.Fatalf("running %v: %v", args, err)
	return 0, "", ""
}

// wantRefusal fails t unless a run exited non-zero with want on the last
// line of its stderr.
func wantRefusal(t *testing.T, code int, stderr, want string) {
	t.Helper()
	if code == 0 {
		t.Fatalf("exit 0; stderr %q", stderr)
	}
	if last := stderr[strings.LastIndex(stderr, "\n")+1:]; !strings.Contains(last, want) {
		t.Errorf("last line %q lacks %q (stderr %.1000q)", last, want, stderr)
	}
}

// snapshot lists the regular files under dir with their sizes and
// modification times (symlinks and FIFOs by name only).
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			fmt.Fprintf(&b, "%s %d %s; ", p, info.Size(), info.ModTime())
		} else {
			b.WriteString(p + "; ")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// dataDirForTests is the data folder this checkout finds, for children
// that run in another folder.
func dataDirForTests(t *testing.T) string {
	t.Helper()
	dir, err := datadir.Dir()
	if err != nil {
		t.Skip(err)
	}
	return dir
}
