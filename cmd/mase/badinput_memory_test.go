package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/data"
)

// memoryInputFiles writes the hostile inputs of the working-memory rows
// and returns their folder: a --pretrained config whose parameters fit
// the 8 GiB bound but not with AdamW's moments, an SST-2 folder whose
// train.tsv is 3 GiB (sparse), and data caches holding an SST-2.zip whose
// train.tsv inflates past its bound and an IMDb archive with a member that
// says it is 300 GiB.
func memoryInputFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, body []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("adamw/config.json", []byte(`{"model_type": "bert", "hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 16384, "num_hidden_layers": 8, "vocab_size": 30522}`))
	// One encoder tensor, so that the checkpoint loads (the other
	// parameters start from the seed) and training is what runs out.
	header := []byte(`{"bert.encoder.layer.0.output.LayerNorm.bias":{"dtype":"F32","shape":[4096],"data_offsets":[0,16384]}}`)
	for len(header)%8 != 0 {
		header = append(header, ' ')
	}
	st := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	write("adamw/model.safetensors", append(append(st, header...), make([]byte, 16384)...))
	good := []byte("sentence\tlabel\na fine film \t1\n")
	write("sst2-huge/dev.tsv", good)
	write("sst2-huge/test.tsv", good)
	if err := os.Truncate(write("sst2-huge/train.tsv", nil), 3<<30); err != nil {
		t.Fatal(err)
	}
	// SST-2.zip in a data cache: train.tsv of 64 MiB of rows, deflated.
	var rows bytes.Buffer
	rows.WriteString("sentence\tlabel\n")
	for int64(rows.Len()) <= data.SST2File.Max {
		rows.WriteString("a fine film \t1\n")
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, body := range map[string][]byte{"SST-2/train.tsv": rows.Bytes(), "SST-2/dev.tsv": good, "SST-2/test.tsv": []byte("index\tsentence\n0\tx\n")} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	write("cache-sst2/sst2/SST-2.zip", zbuf.Bytes())
	// The IMDb archive in a data cache: a member that says 300 GiB.
	var tbuf bytes.Buffer
	gz := gzip.NewWriter(&tbuf)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "aclImdb/train/pos/0_9.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 300 << 30})
	tw.Write(make([]byte, 1<<20))
	tw.Flush()
	gz.Close()
	write("cache-imdb/imdb/aclImdb_v1.tar.gz", tbuf.Bytes())
	// A data folder with the vocabulary only, so that the datasets come
	// from the caches.
	if err := os.MkdirAll(filepath.Join(dir, "vocab-only/bert-base-uncased"), 0o755); err != nil {
		t.Fatal(err)
	}
	vocab := filepath.Join(dataDirForTests(t), "bert-base-uncased", "vocab.txt")
	if err := os.Symlink(vocab, filepath.Join(dir, "vocab-only/bert-base-uncased/vocab.txt")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWorkingMemoryThroughTheBinary drives the sizes that ran out of
// memory inside the documented bounds (or had no bound), the integer
// overflows and the dataset bombs through the mase binary. Every run is
// under an RLIMIT_AS of 16 GiB (prlimit), so that a command that would
// allocate first dies here as it would on a small machine, and the rows
// refuse the same way on any host: each must end with a one-line error
// naming the flags, the estimate and the limit, within seconds, and never
// a Go crash.
func TestWorkingMemoryThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary many times")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	d := memoryInputFiles(t)
	f := func(name string) string { return filepath.Join(d, name) }
	const as16G = 16 << 30
	cases := []struct {
		args []string
		env  []string
		as   int64 // RLIMIT_AS
		want []string
	}{
		// Inside the old bounds, out of memory before.
		{[]string{"profile", "--batch", "4096", "--seq", "512"}, nil, as16G, []string{"mase profile: --batch 4096 --seq 512 needs about ", " of working memory; ", " is available ("}},
		{[]string{"profile", "--model", "resnet18", "--batch", "4096", "--image", "1024"}, nil, as16G, []string{"--model resnet18 --batch 4096 --image 1024 needs about 6.3 TiB of working memory; "}},
		{[]string{"bench", "compile", "--model", "resnet18", "--batch", "4096", "--image", "1024"}, nil, as16G, []string{"mase bench: compile --model resnet18 --batch 4096 --image 1024 needs about 3.7 TiB of working memory; "}},
		{[]string{"train", "--lora-rank", "65536", "--dataset", "sst2", "--limit", "8"}, nil, as16G, []string{"mase train: --batch-size 8 --max-len 512 --lora-rank 65536 needs about 37.3 GiB of working memory; "}},
		{[]string{"train", "--pretrained", f("adamw"), "--dataset", "sst2", "--limit", "8"}, nil, as16G,
			[]string{"the weights of 1754959874 parameters with the gradients and AdamW's two moments of 1754959874 need 26.2 GiB, more than the 8 GiB a model may take (limits.MaxModelBytes)"}},
		{[]string{"search", "--space", "nas", "--num-layers", "2,8", "--num-heads", "32", "--hidden-sizes", "4096", "--intermediate-sizes", "16384"}, nil, as16G,
			[]string{"nas: training the largest model of the space: the weights of ", "more than the 8 GiB a model may take"}},
		// No bound before: explicit ranges now, and no overflow.
		{[]string{"bench", "compile", "--batch", "4611686018427387904", "--seq", "2"}, nil, as16G, []string{"--batch must be 1..4096, --seq 1..512 and --image 32..1024 (got 4611686018427387904, 2, 224)"}},
		{[]string{"bench", "compile", "--batch", "4611686018427387904", "--seq", "4"}, nil, as16G, []string{"--batch must be 1..4096"}},
		{[]string{"bench", "compile", "--model", "resnet18", "--image", "100000"}, nil, as16G, []string{"--image 32..1024"}},
		{[]string{"bench", "compile", "--iters", "1000000000"}, nil, as16G, []string{"--iters 1000000000 is out of range (allowed: 1 to 100000 calls per mode)"}},
		{[]string{"bench", "sdpa", "--shape", "9223372036854775807,2,2,2"}, nil, as16G, []string{"--shape 9223372036854775807,2,2,2: batch × heads × seq × head_dim overflows int64"}},
		{[]string{"bench", "sdpa", "--reps", "1000000000"}, nil, as16G, []string{"--reps must be ≥ 1 and at most 100000 (got 1000000000)"}},
		{[]string{"bench", "mxint8", "--loop", "1000000000", "--backend", "go"}, nil, as16G, []string{"--loop must be ≥ 1 and at most 10000 (got 1000000000)"}},
		// A lowered RLIMIT_AS is seen: 3 GiB refuses what MemAvailable allows.
		{[]string{"profile", "--batch", "256", "--seq", "512"}, nil, 3 << 30, []string{"--batch 256 --seq 512 needs about ", " is available (RLIMIT_AS)"}},
		// Dataset files read whole, and bombs in the caches.
		{[]string{"train", "--dataset", "sst2", "--limit", "8"}, []string{"GOMASE_SST2=" + f("sst2-huge")}, as16G, []string{"train.tsv is 3 GiB, more than the 64 MiB allowed for an SST-2 .tsv file"}},
		{[]string{"train", "--dataset", "sst2", "--limit", "8"}, []string{"GOMASE_DATA_DIR=" + f("vocab-only"), "GOMASE_CACHE_DIR=" + f("cache-sst2")}, as16G,
			[]string{"SST-2.zip:SST-2/train.tsv says it inflates to 64.0 MiB, more than the 64 MiB allowed for an SST-2 .tsv file"}},
		{[]string{"train", "--dataset", "imdb", "--limit", "8"}, []string{"GOMASE_DATA_DIR=" + f("vocab-only"), "GOMASE_CACHE_DIR=" + f("cache-imdb")}, as16G,
			[]string{"member aclImdb/train/pos/0_9.txt says it is 300 GiB, more than the 256 MiB a member may be"}},
	}
	before := snapshot(t, d)
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, msg := runLimited(t, prlimit, c.as, d, c.env, c.args...)
			if code == 0 {
				t.Fatalf("exit 0; stderr %q", msg)
			}
			last := msg[strings.LastIndex(msg, "\n")+1:]
			for _, w := range c.want {
				if !strings.Contains(last, w) {
					t.Errorf("last line %q lacks %q (stderr %.1000q)", last, w, msg)
				}
			}
		})
	}
	// The limit itself leaves room for a small run.
	if code, msg := runLimited(t, prlimit, 3<<30, d, nil, "profile", "--batch", "1", "--seq", "8", "--runs", "1", "--top", "1"); code != 0 {
		t.Errorf("a small profile under a 3 GiB RLIMIT_AS: exit %d: %.1000s", code, msg)
	}
	if after := snapshot(t, d); after != before {
		t.Errorf("the files the commands were given changed:\nbefore %s\nafter  %s", before, after)
	}
}

// runLimited runs this test binary as mase under an RLIMIT_AS of as bytes
// in dir, with env added, and returns its exit code and stderr; a Go
// crash or a run past 60 s fails t.
func runLimited(t *testing.T, prlimit string, as int64, dir string, env []string, args ...string) (int, string) {
	t.Helper()
	// The Go backend, whatever the environment says: the rows count
	// activations in host memory.
	env = append([]string{"GOMLX_BACKEND=", "GOMASE_DATA_DIR=" + dataDirForTests(t)}, env...)
	code, _, msg := badRun(t, dir, 60*time.Second, env, []string{prlimit, fmt.Sprintf("--as=%d", as), "--"}, args...)
	return code, msg
}
