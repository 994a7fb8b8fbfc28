package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/internal/floattest"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/safetensors"
)

// snapshot returns every parameter's float32 bits by name.
func snapshot(t *testing.T, m *nn.Model) map[string][]uint32 {
	t.Helper()
	out := map[string][]uint32{}
	for _, p := range m.Parameters() {
		v, _, err := m.ParamValues(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		out[p.Name] = floattest.Bits(v)
	}
	return out
}

// sameSnapshot reports the first parameter whose bits differ, or "".
func sameSnapshot(a, b map[string][]uint32) string {
	if len(a) != len(b) {
		return "different parameter sets"
	}
	for _, k := range sortedKeys(a) {
		if !slices.Equal(a[k], b[k]) {
			return k
		}
	}
	return ""
}

// scramble sets every parameter to random bit patterns (NaN, Inf, -0 and
// subnormals included).
func scramble(t *testing.T, m *nn.Model, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	for _, p := range m.Parameters() {
		n := 1
		for _, d := range p.Shape {
			n *= d
		}
		if err := p.Variable.SetValue(tensors.FromFlatDataAndDimensions(floattest.Random(n, rng), p.Shape...)); err != nil {
			t.Fatal(err)
		}
	}
}

func newModel(t *testing.T, name string, seed uint64) *nn.Model {
	t.Helper()
	m, err := models.New(name, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSaveLoadModelBitExact(t *testing.T) {
	for _, name := range []string{"mlp", "bert-tiny"} {
		src := newModel(t, name, 1)
		scramble(t, src, 5)
		path := filepath.Join(t.TempDir(), name+".safetensors")
		if err := SaveModel(path, src, map[string]string{"note": "x"}); err != nil {
			t.Fatal(err)
		}
		dst := newModel(t, name, 2)
		if sameSnapshot(snapshot(t, src), snapshot(t, dst)) == "" {
			t.Fatal("the two models start equal: the test would prove nothing")
		}
		r, err := LoadModel(path, dst, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d := sameSnapshot(snapshot(t, src), snapshot(t, dst)); d != "" {
			t.Errorf("%s: parameter %s differs after the round trip", name, d)
		}
		if len(r.Loaded) != len(src.Parameters()) || len(r.Missing)+len(r.Unexpected)+len(r.Renamed)+len(r.Converted) != 0 || r.Prefix != "" {
			t.Errorf("%s: report %+v", name, r)
		}
		if r.Metadata["format"] != "pt" || r.Metadata["note"] != "x" || len(r.Warnings()) != 0 {
			t.Errorf("%s: metadata %v warnings %v", name, r.Metadata, r.Warnings())
		}
	}
}

func TestSavedNamesAreHuggingFaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bert.safetensors")
	if err := SaveModel(path, newModel(t, "bert-tiny", 1), nil); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 41 {
		t.Errorf("%d tensors, want bert-tiny's 41", len(f.Tensors))
	}
	for name, shape := range map[string][]int{
		"bert.embeddings.word_embeddings.weight":               {30522, 128},
		"bert.embeddings.LayerNorm.weight":                     {128},
		"bert.encoder.layer.1.attention.self.query.bias":       {128},
		"bert.encoder.layer.0.intermediate.dense.weight":       {512, 128},
		"bert.pooler.dense.weight":                             {128, 128},
		"classifier.weight":                                    {2, 128},
		"bert.encoder.layer.1.attention.output.LayerNorm.bias": {128},
	} {
		if st := f.Tensors[name]; st == nil || st.DType != safetensors.F32 || !slices.Equal(st.Shape, shape) {
			t.Errorf("tensor %s = %+v, want F32 %v", name, st, shape)
		}
	}
}

func TestLoadTruncatedFileLeavesModelUnchanged(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mlp.safetensors")
	if err := SaveModel(good, newModel(t, "mlp", 1), nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	hlen := int(binary.LittleEndian.Uint64(data))
	m := newModel(t, "mlp", 2)
	before := snapshot(t, m)
	for _, cut := range []int{0, 5, 8, 8 + hlen/2, 8 + hlen - 1, 8 + hlen, 8 + hlen + 3, len(data) - 40, len(data) - 1} {
		path := filepath.Join(dir, "cut.safetensors")
		if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadModel(path, m, LoadOptions{AllowMissing: true, AllowUnexpected: true})
		if err == nil || !errors.Is(err, safetensors.ErrInvalid) || !strings.Contains(err.Error(), path) {
			t.Errorf("cut at %d of %d: err = %v, want ErrInvalid naming the file", cut, len(data), err)
		}
		if d := sameSnapshot(before, snapshot(t, m)); d != "" {
			t.Errorf("cut at %d: parameter %s changed", cut, d)
		}
	}
	if _, err := LoadModel(filepath.Join(dir, "absent.safetensors"), m, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "absent.safetensors") {
		t.Errorf("missing file: %v", err)
	}
}

// handTensor is a tensor for a hand-written file: raw little-endian bytes.
type handTensor struct {
	name  string
	dtype string
	shape []int
	data  []byte
}

// writeHandFile writes a safetensors file the way another program would,
// without this package's writer, in the given tensor order.
func writeHandFile(t *testing.T, path string, ts []handTensor, metadata map[string]string) {
	t.Helper()
	header := map[string]any{}
	if metadata != nil {
		header["__metadata__"] = metadata
	}
	var buf bytes.Buffer
	for _, x := range ts {
		header[x.name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{buf.Len(), buf.Len() + len(x.data)}}
		buf.Write(x.data)
	}
	hj, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
	out = append(append(out, hj...), buf.Bytes()...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// hfStyleFile writes bert-tiny's parameters as HuggingFace might: word
// embeddings in BF16, LayerNorms in F16 under the old gamma/beta names, the
// rest F32, plus the int64 buffer position_ids and no classifier; names
// are passed through rename. It returns the float32 values expected after
// loading, by parameter name.
func hfStyleFile(t *testing.T, path string, m *nn.Model, rename func(string) string) map[string][]float32 {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[string][]float32{}
	var ts []handTensor
	for _, p := range m.Parameters() {
		if strings.HasPrefix(p.Name, "classifier.") {
			continue
		}
		n := 1
		for _, d := range p.Shape {
			n *= d
		}
		vals := make([]float32, n)
		name, dtype := p.Name, "F32"
		var data []byte
		switch {
		case strings.HasSuffix(p.Name, "word_embeddings.weight"):
			dtype = "BF16"
			for i := range vals {
				b := uint16(math.Float32bits(float32(rng.NormFloat64())) >> 16)
				vals[i] = math.Float32frombits(uint32(b) << 16)
				data = binary.LittleEndian.AppendUint16(data, b)
			}
		case strings.Contains(p.Name, "LayerNorm."):
			dtype = "F16"
			name = strings.TrimSuffix(strings.TrimSuffix(name, "weight"), "bias")
			if strings.HasSuffix(p.Name, "weight") {
				name += "gamma"
			} else {
				name += "beta"
			}
			for i := range vals {
				k := rng.IntN(2049) - 1024 // k/256 is exact in F16
				vals[i] = float32(k) / 256
				data = binary.LittleEndian.AppendUint16(data, float32ToHalfExact(t, vals[i]))
			}
		default:
			for i := range vals {
				vals[i] = float32(rng.NormFloat64())
			}
			data = floattest.Bytes(vals)
		}
		want[p.Name] = vals
		ts = append(ts, handTensor{rename(name), dtype, p.Shape, data})
	}
	var pos []byte
	for i := 0; i < 512; i++ {
		pos = binary.LittleEndian.AppendUint64(pos, uint64(i))
	}
	ts = append(ts, handTensor{rename("bert.embeddings.position_ids"), "I64", []int{1, 512}, pos})
	rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	writeHandFile(t, path, ts, map[string]string{"format": "pt"})
	return want
}

// float32ToHalfExact encodes a float32 that F16 holds exactly (normal
// range, at most 10 mantissa bits).
func float32ToHalfExact(t *testing.T, f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if b&0x7fffffff == 0 {
		return sign
	}
	exp := int(b>>23&0xff) - 127 + 15
	man := b & 0x7fffff
	if exp <= 0 || exp >= 31 || man&0x1fff != 0 {
		t.Fatalf("%v is not exact in F16", f)
	}
	return sign | uint16(exp)<<10 | uint16(man>>13)
}

func checkLoaded(t *testing.T, m *nn.Model, want map[string][]float32) {
	t.Helper()
	for name, vals := range want {
		got, _, err := m.ParamValues(name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(floattest.Bits(got), floattest.Bits(vals)) {
			t.Errorf("parameter %s: values differ from the checkpoint's", name)
		}
	}
}

func TestLoadHuggingFaceStyleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	m := newModel(t, "bert-tiny", 1)
	want := hfStyleFile(t, path, m, func(s string) string { return s })
	before := snapshot(t, m)

	// Strict by default: the extra buffer and the missing head are errors,
	// and nothing is loaded.
	_, err := LoadModel(path, m, LoadOptions{AllowMissing: true})
	if err == nil || !strings.Contains(err.Error(), "bert.embeddings.position_ids") || !strings.Contains(err.Error(), "AllowUnexpected") {
		t.Errorf("unexpected buffer: %v", err)
	}
	_, err = LoadModel(path, m, LoadOptions{AllowUnexpected: true})
	if err == nil || !strings.Contains(err.Error(), "classifier.weight, classifier.bias") || !strings.Contains(err.Error(), "AllowMissing") {
		t.Errorf("missing head: %v", err)
	}
	if d := sameSnapshot(before, snapshot(t, m)); d != "" {
		t.Fatalf("a failed load changed %s", d)
	}

	r, err := LoadModel(path, m, LoadOptions{AllowMissing: true, AllowUnexpected: true})
	if err != nil {
		t.Fatal(err)
	}
	checkLoaded(t, m, want)
	for _, name := range []string{"classifier.weight", "classifier.bias"} {
		if got, _, _ := m.ParamValues(name); !slices.Equal(floattest.Bits(got), before[name]) {
			t.Errorf("%s changed though the checkpoint lacks it", name)
		}
	}
	if !slices.Equal(r.Missing, []string{"classifier.weight", "classifier.bias"}) || !slices.Equal(r.Unexpected, []string{"bert.embeddings.position_ids"}) {
		t.Errorf("missing %v unexpected %v", r.Missing, r.Unexpected)
	}
	if r.Renamed["bert.embeddings.LayerNorm.gamma"] != "bert.embeddings.LayerNorm.weight" ||
		r.Renamed["bert.encoder.layer.1.output.LayerNorm.beta"] != "bert.encoder.layer.1.output.LayerNorm.bias" || len(r.Renamed) != 10 {
		t.Errorf("renamed %v", r.Renamed)
	}
	if r.Converted["bert.embeddings.word_embeddings.weight"] != safetensors.BF16 || r.Converted["bert.embeddings.LayerNorm.weight"] != safetensors.F16 || len(r.Converted) != 11 {
		t.Errorf("converted %v", r.Converted)
	}
	w := strings.Join(r.Warnings(), "\n")
	if !strings.Contains(w, "newly initialized: ['classifier.weight', 'classifier.bias']") || !strings.Contains(w, "not used: ['bert.embeddings.position_ids']") {
		t.Errorf("warnings %q", w)
	}
}

func TestLoadBaseModelNamesWithoutPrefix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bert-base.safetensors")
	m := newModel(t, "bert-tiny", 1)
	want := hfStyleFile(t, path, m, func(s string) string { return strings.TrimPrefix(s, "bert.") })
	before := snapshot(t, m)
	if _, err := LoadModel(path, m, LoadOptions{AllowMissing: true, AllowUnexpected: true, NoAutoPrefix: true}); err != nil {
		t.Fatal(err) // nothing matches: everything is unexpected, nothing loaded
	}
	if d := sameSnapshot(before, snapshot(t, m)); d != "" {
		t.Fatalf("without a prefix %s was loaded", d)
	}
	_, err := LoadModel(path, m, LoadOptions{AllowMissing: true, NoAutoPrefix: true})
	if err == nil || !strings.Contains(err.Error(), "embeddings.word_embeddings.weight") || !strings.Contains(err.Error(), "LoadOptions.Prefix") {
		t.Errorf("strict load without prefix: %v", err)
	}
	for _, opts := range []LoadOptions{{AllowMissing: true, AllowUnexpected: true}, {AllowMissing: true, AllowUnexpected: true, Prefix: "bert."}} {
		m := newModel(t, "bert-tiny", 1)
		r, err := LoadModel(path, m, opts)
		if err != nil {
			t.Fatal(err)
		}
		checkLoaded(t, m, want)
		if r.Prefix != "bert" || r.Renamed["embeddings.word_embeddings.weight"] != "bert.embeddings.word_embeddings.weight" ||
			r.Renamed["encoder.layer.0.output.LayerNorm.gamma"] != "bert.encoder.layer.0.output.LayerNorm.weight" {
			t.Errorf("opts %+v: prefix %q renamed %v", opts, r.Prefix, r.Renamed)
		}
		if !slices.Equal(r.Unexpected, []string{"embeddings.position_ids"}) || len(r.Loaded) != 39 {
			t.Errorf("unexpected %v, %d loaded", r.Unexpected, len(r.Loaded))
		}
	}
}

func TestLoadShapeAndDTypeErrorsLoadNothing(t *testing.T) {
	dir := t.TempDir()
	m := newModel(t, "mlp", 1)
	before := snapshot(t, m)
	w := make([]float32, 32)
	path := filepath.Join(dir, "bad.safetensors")
	// fc1.weight is fine; fc1.bias has 9 values: nothing may be loaded.
	writeHandFile(t, path, []handTensor{{"fc1.weight", "F32", []int{8, 4}, floattest.Bytes(w)}, {"fc1.bias", "F32", []int{9}, floattest.Bytes(make([]float32, 9))}}, nil)
	_, err := LoadModel(path, m, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "fc1.bias") || !strings.Contains(err.Error(), "[9]") || !strings.Contains(err.Error(), "[8]") || !strings.Contains(err.Error(), path) {
		t.Errorf("shape mismatch: %v", err)
	}
	writeHandFile(t, path, []handTensor{{"fc1.weight", "F32", []int{8, 4}, floattest.Bytes(w)}, {"fc1.bias", "I64", []int{8}, make([]byte, 64)}}, nil)
	if _, err = LoadModel(path, m, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "fc1.bias") || !strings.Contains(err.Error(), "allowed: F32, F16, BF16, F64") {
		t.Errorf("int64 into float32: %v", err)
	}
	// Old-style names map to the new ones, so gamma beside weight is two
	// tensors for one parameter.
	writeHandFile(t, path, []handTensor{{"fc1.weight", "F32", []int{8, 4}, floattest.Bytes(w)}, {"fc1.bias", "F32", []int{8}, floattest.Bytes(make([]float32, 8))},
		{"fc1.gamma", "F32", []int{8, 4}, floattest.Bytes(w)}}, nil)
	if _, err = LoadModel(path, m, LoadOptions{}); err == nil || !strings.Contains(err.Error(), `"fc1.gamma" and "fc1.weight" both map to parameter fc1.weight`) {
		t.Errorf("two tensors for one parameter: %v", err)
	}
	if d := sameSnapshot(before, snapshot(t, m)); d != "" {
		t.Errorf("failed loads changed %s", d)
	}
}

// failAfter makes the atomic writer fail at the given step for the file
// whose name ends with suffix.
func failAfter(t *testing.T, step, suffix string) {
	t.Helper()
	atomicfile.FailHook = func(s, path string) error {
		if s == step && strings.HasSuffix(path, suffix) {
			return errors.New("simulated failure: disk full")
		}
		return nil
	}
	t.Cleanup(func() { atomicfile.FailHook = nil })
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func TestSaveModelIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mlp.safetensors")
	if err := SaveModel(path, newModel(t, "mlp", 1), nil); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	for _, step := range []string{"write", "sync", "rename"} {
		failAfter(t, step, "mlp.safetensors")
		err := SaveModel(path, newModel(t, "mlp", 2), nil)
		if err == nil || !strings.Contains(err.Error(), "simulated failure") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v", step, err)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
			t.Errorf("failure at %s changed the old file", step)
		}
		if got := listDir(t, dir); !slices.Equal(got, []string{"mlp.safetensors"}) {
			t.Errorf("failure at %s left files %v", step, got)
		}
	}
	atomicfile.FailHook = nil
	if err := SaveModel(filepath.Join(dir, "no", "such", "dir", "m.safetensors"), newModel(t, "mlp", 1), nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing directory: %v", err)
	}
	if err := SaveModel(dir, newModel(t, "mlp", 1), nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory as path: %v", err)
	}
	// A successful save replaces the file, with ordinary permissions.
	if err := SaveModel(path, newModel(t, "mlp", 2), nil); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(path); bytes.Equal(now, old) {
		t.Error("save did not replace the file")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
}

func TestSaveModelReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can write to read-only directories; TestSaveModelIsAtomic simulates the failure instead")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "mlp.safetensors")
	if err := SaveModel(path, newModel(t, "mlp", 1), nil); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if err := SaveModel(path, newModel(t, "mlp", 2), nil); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("read-only directory: %v", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
		t.Error("the old file changed")
	}
}
