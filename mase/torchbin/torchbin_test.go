package torchbin

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/internal/floattest"
	"github.com/gomase/gomase/mase/safetensors"
)

// pickleWriter writes the few opcodes a torch.save state dict uses
// (protocol 2), so that tests can build archives without PyTorch.
type pickleWriter struct{ bytes.Buffer }

func (w *pickleWriter) op(s string)                { w.WriteString(s) }
func (w *pickleWriter) global(module, name string) { w.WriteString("c" + module + "\n" + name + "\n") }
func (w *pickleWriter) str(s string) {
	w.WriteByte('X')
	binary.Write(&w.Buffer, binary.LittleEndian, uint32(len(s)))
	w.WriteString(s)
}
func (w *pickleWriter) int(n int) {
	w.WriteByte('J')
	binary.Write(&w.Buffer, binary.LittleEndian, int32(n))
}
func (w *pickleWriter) ints(v ...int) {
	w.op("(")
	for _, n := range v {
		w.int(n)
	}
	w.op("t")
}

// tensor writes _rebuild_tensor_v2(storage key, offset, size, stride).
func (w *pickleWriter) tensor(storageType, key string, numel, offset int, size, stride []int) {
	w.global("torch._utils", "_rebuild_tensor_v2")
	w.op("(")
	w.op("(")
	w.str("storage")
	w.global("torch", storageType)
	w.str(key)
	w.str("cpu")
	w.int(numel)
	w.op("tQ") // the persistent id tuple, then BINPERSID
	w.int(offset)
	w.ints(size...)
	w.ints(stride...)
	w.op("\x89") // requires_grad False
	w.global("collections", "OrderedDict")
	w.op(")R") // backward hooks: OrderedDict()
	w.op("tR")
}

// torchArchive zips a data.pkl and storages the way torch.save does.
func torchArchive(t *testing.T, pkl []byte, storages map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, data []byte) {
		w, err := zw.Create("archive/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	add("data.pkl", pkl)
	for k, v := range storages {
		add("data/"+k, v)
	}
	add("version", []byte("3\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestParseStateDict(t *testing.T) {
	var w pickleWriter
	w.op("\x80\x02")
	w.global("collections", "OrderedDict")
	w.op(")R(")
	w.str("a.weight") // 2×3, contiguous, at offset 1 of a storage of 7
	w.tensor("FloatStorage", "0", 7, 1, []int{2, 3}, []int{3, 1})
	w.str("a.weight_t") // the transpose of the same storage: 3×2
	w.tensor("FloatStorage", "0", 7, 1, []int{3, 2}, []int{1, 3})
	w.str("b.bias") // a parameter wrapping a half tensor
	w.global("torch._utils", "_rebuild_parameter")
	w.op("(")
	w.tensor("HalfStorage", "1", 2, 0, []int{2}, []int{1})
	w.op("\x88") // requires_grad True
	w.global("collections", "OrderedDict")
	w.op(")RtR")
	w.op("u.")
	half := []byte{0x00, 0x3c, 0x00, 0xc0} // 1.0, -2.0
	data := torchArchive(t, w.Bytes(), map[string][]byte{"0": floattest.Bytes([]float32{9, 1, 2, 3, 4, 5, 6}), "1": half})

	path := filepath.Join(t.TempDir(), "pytorch_model.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Names(); !slices.Equal(got, []string{"a.weight", "a.weight_t", "b.bias"}) {
		t.Fatalf("names %v", got)
	}
	check := func(name string, shape []int, want []float32) {
		t.Helper()
		tt := f.Tensors[name]
		got, err := tt.Float32s()
		if err != nil || !slices.Equal(tt.Shape, shape) || !slices.Equal(got, want) {
			t.Errorf("%s: shape %v values %v (%v), want %v %v", name, tt.Shape, got, err, shape, want)
		}
	}
	check("a.weight", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	check("a.weight_t", []int{3, 2}, []float32{1, 4, 2, 5, 3, 6})
	check("b.bias", []int{2}, []float32{1, -2})
	if f.Tensors["b.bias"].DType != safetensors.F16 {
		t.Errorf("b.bias dtype %s, want F16", f.Tensors["b.bias"].DType)
	}
}

// TestParseRefusesCode: a pickle whose global is os.system (the
// classic malicious pickle) is refused with an error naming it, and
// nothing runs.
func TestParseRefusesCode(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, global := range [][2]string{{"os", "system"}, {"posix", "system"}, {"builtins", "eval"}, {"subprocess", "Popen"}} {
		var w pickleWriter
		w.op("\x80\x02")
		w.global(global[0], global[1])
		w.op("(")
		w.str("touch " + marker)
		w.op("tR.")
		_, err := Parse(torchArchive(t, w.Bytes(), nil))
		if err == nil || !strings.Contains(err.Error(), "refusing the pickle global "+global[0]+"."+global[1]) {
			t.Errorf("%s.%s: error %v, want a refusal naming it", global[0], global[1], err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the pickle's command ran")
	}
}

// oneTensorDict is the pickle of {"w": a 2×2 float view at offset of a
// storage of 4 elements}.
func oneTensorDict(offset int) []byte {
	var w pickleWriter
	w.op("\x80\x02")
	w.global("collections", "OrderedDict")
	w.op(")R(")
	w.str("w")
	w.tensor("FloatStorage", "0", 4, offset, []int{2, 2}, []int{2, 1})
	w.op("u.")
	return w.Bytes()
}

func TestParseBadInput(t *testing.T) {
	ok := oneTensorDict(0)
	var noPickle bytes.Buffer
	zw := zip.NewWriter(&noPickle)
	zw.Create("archive/version")
	zw.Close()
	var notDict pickleWriter
	notDict.op("\x80\x02")
	notDict.int(7)
	notDict.op(".")
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"text", []byte("hello"), "not a zip archive"},
		{"legacy", []byte("\x80\x02\x8a\x0alegacy"), "legacy torch.save format"},
		{"no data.pkl", noPickle.Bytes(), "the zip archive has no data.pkl"},
		{"short storage", torchArchive(t, ok, map[string][]byte{"0": floattest.Bytes([]float32{1, 2})}), "need 16 bytes, the archive holds 8"},
		{"missing storage", torchArchive(t, ok, nil), "no data/0 in the archive"},
		{"not a dict", torchArchive(t, notDict.Bytes(), nil), "not a state dict"},
	} {
		if _, err := Parse(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	// A view reaching past its storage.
	if _, err := Parse(torchArchive(t, oneTensorDict(2), map[string][]byte{"0": floattest.Bytes([]float32{1, 2, 3, 4})})); err == nil || !strings.Contains(err.Error(), "reaches element 5 of a storage of 4") {
		t.Errorf("out-of-range view: %v", err)
	}
}
