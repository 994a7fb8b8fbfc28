package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/internal/floattest"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/safetensors"
	"github.com/gomase/gomase/mase/trace"
)

// smallBertConfig is bert-tiny's architecture (2 layers, 2 heads) at a
// size that builds and runs in milliseconds.
func smallBertConfig() models.BertConfig {
	cfg := models.BertTinyConfig()
	cfg.VocabSize, cfg.HiddenSize, cfg.IntermediateSize, cfg.MaxPositionEmbeddings = 128, 16, 32, 32
	return cfg
}

// smallBertIDs are token ids inside smallBertConfig's vocabulary.
var smallBertIDs = [][]int32{{1, 99, 3, 7, 102}, {1, 5, 6, 8, 102}}

// flipCase is an exported checkpoint with the inputs its forward runs on.
type flipCase struct {
	name string
	mg   *ir.MaseGraph
	in   map[string]*tensors.Tensor
	// base is the checkpoint; js and st its two files' bytes.
	base   string
	js, st []byte
}

// exportFlipCases exports the MLP and a small 2-layer BERT (with
// metadata, so that most of its graph file is node metadata) into dir.
func exportFlipCases(t testing.TB, dir string) []flipCase {
	t.Helper()
	mm, err := models.NewMLP(3)
	if err != nil {
		t.Fatal(err)
	}
	mlp, err := trace.NewMaseGraph(mm, nil)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := models.NewBertForSequenceClassification(smallBertConfig(), 5)
	if err != nil {
		t.Fatal(err)
	}
	bert, err := trace.NewMaseGraph(bm, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]*tensors.Tensor{"input_ids": tensors.FromValue(smallBertIDs)}
	if bert, _, err = passes.InitMetadata(bert); err != nil {
		t.Fatal(err)
	}
	if bert, _, err = passes.AddCommonMetadata(bert, passes.CommonMetadataArgs{DummyIn: ids}); err != nil {
		t.Fatal(err)
	}
	cases := []flipCase{
		{name: "mlp", mg: mlp, in: map[string]*tensors.Tensor{"x": tensors.FromValue([][]float32{{1, -2, 3, -4}, {0.5, 0.25, -1, 2}})}},
		{name: "bert", mg: bert, in: ids},
	}
	for i := range cases {
		c := &cases[i]
		c.base = filepath.Join(dir, c.name)
		if err := Export(c.base, c.mg, Spec{}); err != nil {
			t.Fatal(err)
		}
		if c.js, err = os.ReadFile(c.base + ".json"); err != nil {
			t.Fatal(err)
		}
		if c.st, err = os.ReadFile(c.base + ".safetensors"); err != nil {
			t.Fatal(err)
		}
	}
	return cases
}

// forward runs mg on in and returns its outputs' float32 bits.
func forward(mg *ir.MaseGraph, in map[string]*tensors.Tensor) ([][]uint32, error) {
	outs, err := execute.Run(mg, in)
	if err != nil {
		return nil, err
	}
	var bits [][]uint32
	for _, o := range outs {
		vals, err := tensors.CopyFlatData[float32](o)
		if err != nil {
			return nil, err
		}
		bits = append(bits, floattest.Bits(vals))
	}
	return bits, nil
}

// flips are n (byte, bit) positions spread evenly over size bytes, the
// bit cycling through all eight.
func flips(n, size int) [][2]int {
	n = min(n, size*8)
	out := make([][2]int, n)
	for i := range out {
		out[i] = [2]int{int((int64(2*i+1) * int64(size)) / int64(2*n)), (3 * i) % 8}
	}
	return out
}

// flipped returns data with one bit flipped.
func flipped(data []byte, at [2]int) []byte {
	out := bytes.Clone(data)
	out[at[0]] ^= 1 << at[1]
	return out
}

// lineAt describes the line of data holding byte i, for failure messages.
func lineAt(data []byte, i int) string {
	start := bytes.LastIndexByte(data[:i], '\n') + 1
	end := bytes.IndexByte(data[i:], '\n')
	if end < 0 {
		end = len(data) - i
	}
	line := string(data[start : i+end])
	if len(line) > 120 {
		from := max(0, i-start-60)
		line = "…" + line[from:min(len(line), from+120)] + "…"
	}
	return fmt.Sprintf("line %d %q", bytes.Count(data[:i], []byte{'\n'})+1, line)
}

// TestBitFlips is the hostile-input review's experiment: one bit flipped
// at a time, spread over the graph file (300 flips each for the MLP and a
// 2-layer BERT) and over the parameters file (60 flips each). Every flip
// must be refused with one line naming the file and saying it is corrupt
// or was edited, or import to a graph whose forward output is bit for bit
// the original's. Before the graph file had a checksum, 8% of such flips
// imported, some of them changing the output.
func TestBitFlips(t *testing.T) {
	dir := t.TempDir()
	for _, c := range exportFlipCases(t, dir) {
		t.Run(c.name, func(t *testing.T) {
			want, err := forward(c.mg, c.in)
			if err != nil {
				t.Fatal(err)
			}
			base := filepath.Join(dir, "flip_"+c.name)
			for _, file := range []struct {
				ext  string
				data []byte
				n    int
			}{{".json", c.js, 300}, {".safetensors", c.st, 60}} {
				imported, refused := 0, 0
				for _, at := range flips(file.n, len(file.data)) {
					js, st := c.js, c.st
					if file.ext == ".json" {
						js = flipped(js, at)
					} else {
						st = flipped(st, at)
					}
					if err := os.WriteFile(base+".json", js, 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(base+".safetensors", st, 0o644); err != nil {
						t.Fatal(err)
					}
					where := fmt.Sprintf("%s byte %d bit %d", file.ext, at[0], at[1])
					if file.ext == ".json" {
						where += " (" + lineAt(c.js, at[0]) + ")"
					}
					got, err := Import(base)
					if err != nil {
						refused++
						msg := err.Error()
						if strings.Contains(msg, "\n") || !strings.Contains(msg, base+file.ext) || !strings.Contains(msg, "corrupt or was edited") {
							t.Errorf("%s: error %q, want one line naming %s and saying it is corrupt or was edited", where, msg, base+file.ext)
						}
						continue
					}
					imported++
					out, err := forward(got, c.in)
					if err != nil {
						t.Errorf("%s: imported, but the forward fails: %v", where, err)
						continue
					}
					if !slices.EqualFunc(out, want, slices.Equal) {
						t.Errorf("%s: imported with a different forward output", where)
					}
				}
				t.Logf("%s: %d flips refused, %d imported with the same output", file.ext, refused, imported)
			}
		})
	}
}

// resealed seals an edited graph file again as Export does (the SHA-256 of
// the file without its second line, written as that line), computed here
// independently of the package, so that validation, not the checksum, is
// what must refuse the edit.
func resealed(t *testing.T, js []byte) []byte {
	t.Helper()
	lines := bytes.SplitN(js, []byte("\n"), 3)
	if len(lines) != 3 || !bytes.HasPrefix(lines[1], []byte(` "checksum": "sha256:`)) {
		t.Fatalf("not a sealed graph file: %.80q", js)
	}
	body := append(append(bytes.Clone(lines[0]), '\n'), lines[2]...)
	sum := sha256.Sum256(body)
	line := fmt.Sprintf(` "checksum": "sha256:%x",`, sum)
	return slices.Concat(lines[0], []byte("\n"), []byte(line), []byte("\n"), lines[2])
}

// asVersion1 turns a sealed graph file into the format written before
// checksums: no checksum line, version 1.
func asVersion1(t testing.TB, js []byte) []byte {
	t.Helper()
	lines := bytes.SplitN(js, []byte("\n"), 3)
	if len(lines) != 3 || !bytes.HasPrefix(lines[1], []byte(` "checksum": `)) {
		t.Fatalf("not a sealed graph file: %.80q", js)
	}
	body := append(append(bytes.Clone(lines[0]), '\n'), lines[2]...)
	return bytes.Replace(body, []byte(`"version": 2,`), []byte(`"version": 1,`), 1)
}

// replaceOnce replaces the first old in data, which must hold it.
func replaceOnce(t *testing.T, data []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("the file lacks %q", old)
	}
	return bytes.Replace(data, []byte(old), []byte(new), 1)
}

// withParameters rewrites the parameters file through edit and records
// its new size and SHA-256 in the graph file.
func withParameters(t *testing.T, js, st []byte, edit func(f *safetensors.File)) ([]byte, []byte) {
	t.Helper()
	f, err := safetensors.Parse(st)
	if err != nil {
		t.Fatal(err)
	}
	edit(f)
	out, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	old, nw := sha256.Sum256(st), sha256.Sum256(out)
	js = replaceOnce(t, js, fmt.Sprintf(`"bytes":%d,"sha256":"%x","count":%d`, len(st), old, len(f.Tensors)), fmt.Sprintf(`"bytes":%d,"sha256":"%x","count":%d`, len(out), nw, len(f.Tensors)))
	return js, out
}

// TestImportRefusesCraftedFiles: hand-made graph files that are well
// formed JSON and carry a valid checksum (or, as version 1 files, none),
// each wrong in one way, are refused by validation in one line naming the
// file, the node or field, and what is allowed — and none allocates what
// a size in it asks for. Before validation, most of them imported (and
// failed, or ran differently, only later).
func TestImportRefusesCraftedFiles(t *testing.T) {
	dir := t.TempDir()
	cases := exportFlipCases(t, dir)
	mlp, bert := cases[0], cases[1]
	type edit func(t *testing.T, js, st []byte) ([]byte, []byte)
	text := func(old, new string) edit {
		return func(t *testing.T, js, st []byte) ([]byte, []byte) { return replaceOnce(t, js, old, new), st }
	}
	for _, c := range []struct {
		name string
		on   flipCase
		edit edit
		want string
	}{
		{"module target absent", mlp, text(`"target":"fc1"`, `"target":"fc2"`),
			`node 2 (fc1): call_module target "fc2" is not a module of the model (allowed: its leaf modules, e.g. fc1)`},
		{"module target a container", bert, text(`"target":"bert.embeddings.LayerNorm"`, `"target":"bert.embeddings"`),
			`call_module target "bert.embeddings" is a BertEmbeddings, which cannot be called (allowed: a leaf module, e.g.`},
		{"get_attr of no parameter", mlp, text(`"op":"call_module","target":"fc1","args":[{"node":"flatten"}]`, `"op":"get_attr","target":"fc1.weights","args":null`),
			`node 2 (fc1): get_attr target "fc1.weights" is not a parameter or buffer of the model (allowed: one of its 2 parameters and buffers, e.g. fc1.bias, fc1.weight)`},
		{"get_attr with arguments", mlp, text(`"op":"call_module","target":"fc1","args":[{"node":"flatten"}]`, `"op":"get_attr","target":"fc1.weight","args":[{"node":"flatten"}]`),
			`node 2 (fc1): a get_attr node takes no arguments`},
		{"unknown function", mlp, text(`"target":"relu"`, `"target":"rel"`), `node 3 (relu): no lowering for function "rel" (known: add,`},
		{"unknown node kind", mlp, text(`"op":"call_function","target":"relu"`, `"op":"call_functiom","target":"relu"`),
			`node 3 (relu): unknown node kind "call_functiom" (allowed: placeholder, get_attr, call_module, call_function, call_method, output)`},
		{"missing node reference", mlp, text(`{"node":"fc1"}`, `{"node":"fc9"}`), `node 3 (relu): args[0]: node reference "fc9" names no node defined before this one`},
		{"reference to a later node", bert, text(`"args":[{"node":"input_ids"}],"kwargs":null`, `"args":[{"node":"classifier"}],"kwargs":null`),
			`node reference "classifier" names no node defined before this one`},
		{"float where an int", mlp, text(`"start_dim":{"int":1}`, `"start_dim":{"float":1}`),
			`node 1 (flatten): call_function flatten: keyword start_dim is 1.0 (a float) (allowed: an int)`},
		{"tensor where an int", bert, text(`{"node":"getitem_1"},{"node":"getitem_2"},{"int":2}`, `{"node":"getitem_1"},{"node":"bert_embeddings_dropout"},{"int":2}`),
			`(view): call_method view: argument 2 (size) is %bert_embeddings_dropout (a tensor) (allowed: ints, or one tuple of ints)`},
		{"int where a tensor", mlp, text(`"args":[{"node":"fc1"}]`, `"args":[{"int":1}]`),
			`node 3 (relu): call_function relu: argument 0 (input) is 1 (an int) (allowed: a tensor)`},
		{"string where a tensor", mlp, text(`"args":[{"node":"flatten"}]`, `"args":["flatten"]`),
			`node 2 (fc1): call_module fc1: argument 0 is "flatten" (a string) (allowed: a tensor)`},
		{"keyword the lowering ignores", mlp, text(`"kwargs":{"inplace":false}`, `"kwargs":{"inplace":false,"alpha":{"int":2}}`),
			`call_function relu: unknown keyword "alpha" (allowed: inplace)`},
		{"attention dropout 5.0", bert, text(`"dropout_p":{"float":0.1}`, `"dropout_p":{"float":5.0}`),
			`call_function scaled_dot_product_attention: dropout_p 5 is not a dropout probability (allowed: 0 ≤ p < 1)`},
		{"config dropout 5.0", bert, text(`"hidden_dropout_prob":0.1`, `"hidden_dropout_prob":5.0`),
			`bert config: hidden_dropout_prob 5 is not a dropout probability (allowed: 0 ≤ p < 1)`},
		{"replaced dropout 5.0", bert, text(`],
 "nodes": [`, `],
 "replaced": [
  {"path":"bert.embeddings.dropout","kind":"Dropout","config":{"P":5}}
 ],
 "nodes": [`), `replaced module bert.embeddings.dropout: module kind Dropout: Dropout: p 5 is not a dropout probability (allowed: 0 ≤ p < 1)`},
		{"hidden_size 10^12", bert, text(`"hidden_size":16`, `"hidden_size":1000000000000`),
			`bert config: hidden_size 1000000000000 is out of range (allowed: 1 to 65536)`},
		{"declared shape 10^12", bert, text(`"shape":[128,16]`, `"shape":[1000000000000,16]`),
			`module bert.embeddings.word_embeddings parameter weight dimension 0: 1000000000000 is out of range (allowed: 1 to 2097152)`},
		{"declared model beyond the cap", bert, text(`"shape":[128,16]`, `"shape":[2000000,2000000]`),
			`the model the module list describes (4000000005330 float32 values) needs 14.6 TiB, more than the 8 GiB a model may take (limits.MaxModelBytes)`},
		{"replaced Linear 10^12", mlp, text(`],
 "nodes": [`, `],
 "replaced": [
  {"path":"fc1","kind":"Linear","config":{"InFeatures":1000000000000,"OutFeatures":8,"Bias":true}}
 ],
 "nodes": [`), `replaced module fc1: module kind Linear: Linear: in_features 1000000000000 is out of range (allowed: 1 to 2097152)`},
		{"second output", mlp, text(`
 ],
 "meta"`, `,
  {"name":"output_1","op":"output","target":"output","args":[{"node":"fc1"}],"kwargs":null,"meta":null}
 ],
 "meta"`), `node 5 (output_1): graph already has an output node "output"`},
		{"no output", mlp, text(`,
  {"name":"output","op":"output","target":"output","args":[{"node":"relu"}],"kwargs":null,"meta":null}`, ``),
			`graph lint failed: graph has 0 output nodes, want exactly 1`},
		{"output with no value", mlp, text(`"target":"output","args":[{"node":"relu"}]`, `"target":"output","args":[]`),
			`node 4 (output): the output node must have target "output" and one argument`},
		{"placeholder of no input", mlp, text(`"op":"placeholder","target":"x"`, `"op":"placeholder","target":"y"`),
			`node 0 (x): placeholder for "y", but input_names [x] call for input "x" here`},
		{"input name not an identifier", mlp, text(`"input_names": ["x"]`, `"input_names": ["x y"]`),
			`input_names[0] "x y" is not an input name (allowed: letters, digits and '_', not starting with a digit)`},
		{"meta naming no node", mlp, text(`"meta": {}`, `"meta": {"nodes_out":["relu_9"]}`),
			`meta.nodes_out names "relu_9", which is not a node of the graph`},
		{"module call rewired to another layer", bert, text(`"target":"bert.encoder.layer.0.attention.self.query"`, `"target":"bert.encoder.layer.1.attention.self.query"`),
			`the graph calls module bert.encoder.layer.1.attention.self.query 2 times where model BertForSequenceClassification calls it once`},
		{"classifier skips the pooler", bert, text(`"target":"dropout","args":[{"node":"bert_pooler_activation"}]`, `"target":"dropout","args":[{"node":"getitem_5"}]`),
			`the graph's output never depends on module bert.pooler.dense (Linear) or its weights, though model BertForSequenceClassification calls it once`},
		{"parameter in another dtype", mlp, func(t *testing.T, js, st []byte) ([]byte, []byte) {
			return withParameters(t, js, st, func(f *safetensors.File) {
				f.Tensors["fc1.bias"] = &safetensors.Tensor{DType: safetensors.F16, Shape: []int{8}, Data: make([]byte, 16)}
			})
		}, `parameters: tensor fc1.bias is F16 in the parameters file, not the parameter's own dtype (allowed: what Export writes, F32 for float parameters, I32 for int ones)`},
		{"parameter of another shape", mlp, func(t *testing.T, js, st []byte) ([]byte, []byte) {
			return withParameters(t, js, st, func(f *safetensors.File) {
				f.Tensors["fc1.bias"], _ = safetensors.NewF32([]int{4}, make([]float32, 4))
			})
		}, `tensor fc1.bias: shape [4] in the checkpoint, but parameter fc1.bias has shape [8]`},
	} {
		for _, version := range []int{2, 1} {
			t.Run(fmt.Sprintf("%s/v%d", c.name, version), func(t *testing.T) {
				js, st := c.edit(t, c.on.js, c.on.st)
				if version == 1 {
					js = asVersion1(t, js)
				} else {
					js = resealed(t, js)
				}
				base := filepath.Join(t.TempDir(), c.on.name)
				if err := os.WriteFile(base+".json", js, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(base+".safetensors", st, 0o644); err != nil {
					t.Fatal(err)
				}
				_, _, err := ImportWith(base, ImportOptions{AcceptUnsealed: version == 1})
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), base+".json") || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %v\nwant one line naming %s.json and containing %q", err, base, c.want)
				}
			})
		}
	}
}
