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
	if n != int(int32(n)) { // LONG1: little-endian two's complement
		w.WriteString("\x8a\x08")
		binary.Write(&w.Buffer, binary.LittleEndian, int64(n))
		return
	}
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
func torchArchive(t testing.TB, pkl []byte, storages map[string][]byte) []byte {
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

// stateDictPickle is the pickle of a state dict with a contiguous view at
// an offset, its transpose from the same storage ("0", 7 floats) and a
// Parameter wrapping a half tensor (storage "1", 2 halves).
func stateDictPickle() []byte {
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
	return w.Bytes()
}

// stateDictStorages are stateDictPickle's storages.
func stateDictStorages() map[string][]byte {
	half := []byte{0x00, 0x3c, 0x00, 0xc0} // 1.0, -2.0
	return map[string][]byte{"0": floattest.Bytes([]float32{9, 1, 2, 3, 4, 5, 6}), "1": half}
}

func TestParseStateDict(t *testing.T) {
	data := torchArchive(t, stateDictPickle(), stateDictStorages())

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

// viewDict is the pickle of {"w": a view (offset, size, stride) of storage
// "0", numel elements of storageType}.
func viewDict(storageType string, numel, offset int, size, stride []int) []byte {
	var w pickleWriter
	w.op("\x80\x02")
	w.global("collections", "OrderedDict")
	w.op(")R(")
	w.str("w")
	w.tensor(storageType, "0", numel, offset, size, stride)
	w.op("u.")
	return w.Bytes()
}

// TestParseViews: every view is checked against its storage with
// overflow-checked arithmetic, and the error names the tensor. Before the
// fix, a stride of 2^62 wrapped the end-of-view computation: float32 loaded
// the first element five times, float16 panicked.
func TestParseViews(t *testing.T) {
	floats := floattest.Bytes([]float32{1, 2, 3, 4})
	halves := []byte{0x00, 0x3c, 0x00, 0x40, 0x00, 0x42, 0x00, 0x44} // 1, 2, 3, 4
	ones := make([]int, 65)
	for i := range ones {
		ones[i] = 1
	}
	const max = 1<<63 - 1
	for _, c := range []struct {
		name          string
		storage       string
		numel, offset int
		size, stride  []int
		want          string    // error; "" for a tensor
		values        []float32 // the tensor's values
	}{
		{"contiguous", "FloatStorage", 4, 0, []int{2, 2}, []int{2, 1}, "", []float32{1, 2, 3, 4}},
		{"transposed", "FloatStorage", 4, 0, []int{2, 2}, []int{1, 2}, "", []float32{1, 3, 2, 4}},
		{"broadcast (stride 0)", "FloatStorage", 4, 1, []int{3}, []int{0}, "", []float32{2, 2, 2}},
		{"empty", "FloatStorage", 4, 0, []int{0, 5}, []int{5, 1}, "", []float32{}},
		{"last element", "FloatStorage", 4, 3, []int{1}, []int{1}, "", []float32{4}},
		{"one past the end", "FloatStorage", 4, 3, []int{2}, []int{1}, `tensor "w": a view of size [2], stride [1] at offset 3 reaches element 4 of a storage of 4 elements`, nil},
		{"huge stride float32", "FloatStorage", 4, 0, []int{5}, []int{1 << 62}, `tensor "w": a view of size [5], stride [4611686018427387904] at offset 0 reaches past element 2^63 of a storage of 4 elements`, nil},
		{"huge stride float16", "HalfStorage", 4, 0, []int{5}, []int{1 << 62}, `tensor "w": a view of size [5], stride [4611686018427387904] at offset 0 reaches past element 2^63`, nil},
		{"stride wrapping negative", "FloatStorage", 4, 0, []int{3}, []int{max}, `reaches past element 2^63 of a storage of 4 elements`, nil},
		{"offset overflow", "FloatStorage", 4, max, []int{2}, []int{1}, `tensor "w": a view of size [2], stride [1] at offset 9223372036854775807 reaches past element 2^63`, nil},
		{"huge offset", "FloatStorage", 4, 1 << 40, []int{1}, []int{1}, `reaches element 1099511627776 of a storage of 4 elements`, nil},
		{"negative stride", "FloatStorage", 4, 3, []int{2}, []int{-1}, `tensor "w": stride [-1] has the negative stride -1 (allowed: 0 or more`, nil},
		{"negative size", "FloatStorage", 4, 0, []int{-1}, []int{1}, `tensor "w": size [-1] has the negative dimension -1 (allowed: 0 or more)`, nil},
		{"negative offset", "FloatStorage", 4, -1, []int{1}, []int{1}, `tensor "w": storage offset -1 is negative (allowed: 0 or more)`, nil},
		{"2^64 elements", "FloatStorage", 4, 0, []int{1 << 32, 1 << 32}, []int{0, 0}, `tensor "w": size [4294967296 4294967296] has more than 2^63 elements`, nil},
		{"a 4 TiB broadcast", "FloatStorage", 4, 0, []int{1 << 40}, []int{0}, `tensor "w": the checkpoint's tensors need 4 TiB, more than the 8 GiB allowed`, nil},
		{"2^62 bytes", "DoubleStorage", 4, 0, []int{1 << 61}, []int{0}, `tensor "w": 2305843009213693952 elements of F64 are more than 2^63 bytes`, nil},
		{"65 dimensions", "FloatStorage", 4, 0, ones, ones, "size: 65 dimensions (allowed: up to 64)", nil},
		{"sizes and strides differ", "FloatStorage", 4, 0, []int{2, 2}, []int{1}, "2 sizes but 1 strides", nil},
		{"storage of 2^62 elements", "FloatStorage", 1 << 62, 0, []int{1}, []int{1}, `storage "0": 4611686018427387904 elements of F32 need more than 2^63 bytes, the archive holds 16`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := floats
			if c.storage == "HalfStorage" {
				data = halves
			}
			if c.storage == "DoubleStorage" {
				data = append(slices.Clone(floats), floats...)
			}
			f, err := Parse(torchArchive(t, viewDict(c.storage, c.numel, c.offset, c.size, c.stride), map[string][]byte{"0": data}))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %v, want one line containing %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Tensors["w"].Float32s()
			if err != nil || !slices.Equal(got, c.values) || !slices.Equal(f.Tensors["w"].Shape, c.size) {
				t.Fatalf("values %v shape %v (%v), want %v %v", got, f.Tensors["w"].Shape, err, c.values, c.size)
			}
		})
	}
}

// le64 is v as 8 little-endian bytes.
func le64(v uint64) string { return string(binary.LittleEndian.AppendUint64(nil, v)) }

// le32 is v as 4 little-endian bytes.
func le32(v uint32) string { return string(binary.LittleEndian.AppendUint32(nil, v)) }

// TestParseHostilePickle: lengths are bounded by the bytes that remain
// before gopickle allocates, and the inputs that made gopickle panic or
// grow without bound are refused with an error naming the opcode and its
// offset. Before the fix, the huge lengths panicked (makeslice) or died
// out of memory, and LONG1 of 0 bytes, opcode 0xff, DICT with an odd
// number of items and a bytes key panicked.
func TestParseHostilePickle(t *testing.T) {
	rep := strings.Repeat
	od := "ccollections\nOrderedDict\n)R" // an OrderedDict: a Go map inside
	for _, c := range []struct {
		name, pkl, want string
	}{
		{"FRAME 2^45", "\x80\x04\x95" + le64(1<<45) + "N.", "FRAME (0x95) at byte 2: a length of 35184372088832 bytes, but only 2 bytes of the pickle remain"},
		{"FRAME 2^63+1", "\x80\x04\x95" + le64(1<<63+1) + "N.", "FRAME (0x95) at byte 2: a length of 9223372036854775809 bytes"},
		{"BINBYTES8 2^62", "\x80\x04\x8e" + le64(1<<62) + "abc.", "BINBYTES8 (0x8e) at byte 2: a length of 4611686018427387904 bytes, but only 4 bytes of the pickle remain"},
		{"BINUNICODE8 2^50", "\x80\x04\x8d" + le64(1<<50) + ".", "BINUNICODE8 (0x8d) at byte 2: a length of 1125899906842624 bytes"},
		{"BINUNICODE8 2^64-1", "\x80\x04\x8d" + le64(1<<64-1) + ".", "BINUNICODE8 (0x8d) at byte 2: a length of 18446744073709551615 bytes"},
		{"BYTEARRAY8 2^45", "\x80\x05\x96" + le64(1<<45) + ".", "BYTEARRAY8 (0x96) at byte 2: a length of 35184372088832 bytes"},
		{"BINBYTES 2^32-1", "\x80\x03B" + le32(1<<32-1) + ".", "BINBYTES (0x42) at byte 2: a length of 4294967295 bytes, but only 1 bytes of the pickle remain"},
		{"BINUNICODE 2^32-1", "\x80\x02X" + le32(1<<32-1) + ".", "BINUNICODE (0x58) at byte 2: a length of 4294967295 bytes"},
		{"BINSTRING 2^31-1", "\x80\x02T" + le32(1<<31-1) + ".", "BINSTRING (0x54) at byte 2: a length of 2147483647 bytes"},
		{"BINSTRING negative", "\x80\x02T" + le32(1<<32-1) + ".", "BINSTRING (0x54) at byte 2: a negative length -1"},
		{"SHORT_BINBYTES 255", "\x80\x03C\xffab.", "SHORT_BINBYTES (0x43) at byte 2: a length of 255 bytes, but only 3 bytes"},
		{"SHORT_BINUNICODE 255", "\x80\x04\x8c\xffab.", "SHORT_BINUNICODE (0x8c) at byte 2: a length of 255 bytes"},
		{"SHORT_BINSTRING 255", "\x80\x02U\xffab.", "SHORT_BINSTRING (0x55) at byte 2: a length of 255 bytes"},
		{"LONG4 2^31-1", "\x80\x02\x8b" + le32(1<<31-1) + ".", "LONG4 (0x8b) at byte 2: an integer of 2147483647 bytes (allowed: up to 1024, limits.MaxPickleIntBytes)"},
		{"LONG4 0 bytes", "\x80\x02\x8b" + le32(0) + ".", "LONG4 (0x8b) at byte 2: an integer of 0 bytes"},
		{"LONG1 0 bytes", "\x80\x02\x8a\x00.", "LONG1 (0x8a) at byte 2: an integer of 0 bytes"},
		{"LONG1 past the end", "\x80\x02\x8a\x09abc", "LONG1 (0x8a) at byte 2: a length of 9 bytes, but only 3 bytes"},
		{"LONG text too long", "\x80\x02L" + rep("9", 5000) + "L\n.", "LONG (0x4c) at byte 2: a text argument longer than 1026 bytes"},
		{"BINFLOAT cut", "\x80\x02G\x00\x01", "BINFLOAT (0x47) at byte 2: the pickle ends inside the opcode's 8-byte argument"},
		{"LONG_BINPUT cut", "\x80\x02Nr\x01\x02", "LONG_BINPUT (0x72) at byte 3: the pickle ends inside the opcode's 4-byte argument"},
		{"opcode 0xff", "\x80\x02\xff.", "0xff at byte 2: not a pickle opcode gomase reads"},
		{"protocol 6", "\x80\x06N.", "PROTO (0x80) at byte 0: protocol 6 (allowed: 0 to 5)"},
		{"GLOBAL without newline", "\x80\x02ccollections\nOrderedDict", "GLOBAL (0x63) at byte 2: the pickle ends before the argument's newline"},
		{"GLOBAL name of 2000 bytes", "\x80\x02c" + rep("m", 2000) + "\nx\n.", "GLOBAL (0x63) at byte 2: a text argument longer than 1023 bytes"},
		{"DICT of 3 items", "\x80\x02(NNNd.", "DICT (0x64) at byte 6: 3 items, not key and value pairs"},
		{"SETITEMS of 1 item", "\x80\x02}(Nu.", "SETITEMS (0x75) at byte 5: 1 items, not key and value pairs"},
		{"bytes key (SETITEM)", "\x80\x03" + od + "C\x01xNs.", "SETITEM (0x73) at byte 33: a bytes object as a dict or set key"},
		{"bytes key (SETITEMS, memoized)", "\x80\x03C\x01xq\x00" + od + "(h\x00Nu.", "SETITEMS (0x75) at byte 38: a bytes object as a dict or set key"},
		{"bytes key (SETITEMS, MEMOIZE)", "\x80\x04N\x94C\x01x\x94" + od + "(h\x01Nu.", "SETITEMS (0x75) at byte 39: a bytes object as a dict or set key"},
		{"bytes key (BUILD keeps the object)", "\x80\x03" + od + "C\x01xNbNs.", "SETITEM (0x73) at byte 35: a bytes object as a dict or set key"},
		{"bytes in a FROZENSET", "\x80\x04(C\x01x\x91.", "FROZENSET (0x91) at byte 6: a bytes object as a dict or set key"},
		{"bytes in ADDITEMS", "\x80\x04\x8f(C\x01x\x90.", "ADDITEMS (0x90) at byte 7: a bytes object as a dict or set key"},
		{"stack underflow", "\x80\x02R.", "REDUCE (0x52) at byte 2: the stack holds fewer objects than the opcode takes"},
		{"underflow below a MARK", "\x80\x02N(\x85.", "TUPLE1 (0x85) at byte 4: the stack holds fewer objects"},
		{"POP_MARK without MARK", "\x80\x021.", "POP_MARK (0x31) at byte 2: no MARK to pop"},
		{"OBJ without class", "\x80\x02(o.", "OBJ (0x6f) at byte 3: no class after the MARK"},
		{"extension code", "\x80\x02\x82\x01.", "EXT1 (0x82) at byte 2: extension codes and out-of-band buffers are not used by state dicts"},
		{"out-of-band buffer", "\x80\x05\x97.", "NEXT_BUFFER (0x97) at byte 2"},
		{"no STOP", "\x80\x02N", "the pickle ends at byte 3 without a STOP opcode"},
		{"4097 MARKs", "\x80\x02" + rep("(", 4097), "MARK (0x28) at byte 4098: more than 4096 MARKs open at once"},
		{"2^20+1 objects", "\x80\x02" + rep("N", 1<<20+1), "NONE (0x4e) at byte 1048578: more than 1048576 objects on the stack"},
		{"2^20+1 memo writes", "\x80\x04N" + rep("\x94", 1<<20+1), "MEMOIZE (0x94) at byte 1048579: more than 1048576 memo writes"},
		{"2^22+1 opcodes", "\x80\x02" + rep("N0", 1<<21+1), "the pickle has more than 4194304 opcodes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(torchArchive(t, []byte(c.pkl), nil))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line containing %q", err, c.want)
			}
		})
	}
}

// protocol4Pickle is {"a": a 2×2 view of storage "0" (4 floats), "b": the
// same tensor through the memo}, in protocol 4 inside one FRAME.
func protocol4Pickle() []byte {
	var body pickleWriter
	short := func(s string) { body.op("\x8c" + string(rune(len(s))) + s + "\x94") }
	short("collections")
	short("OrderedDict")
	body.op("\x93\x94)R\x94(")
	short("a")
	body.tensor("FloatStorage", "0", 4, 0, []int{2, 2}, []int{2, 1})
	body.op("\x94")
	short("b")
	body.op("h\x05") // memo 5: the tensor "a" (0-4: two names, the class, the dict, "a")
	body.op("u.")
	return []byte("\x80\x04\x95" + le64(uint64(body.Len())) + body.String())
}

// TestParseProtocol4: a protocol-4 pickle (FRAME, SHORT_BINUNICODE,
// STACK_GLOBAL, MEMOIZE, BINGET), as torch.save(..., pickle_protocol=4)
// writes, passes the check and loads.
func TestParseProtocol4(t *testing.T) {
	pkl := protocol4Pickle()
	f, err := Parse(torchArchive(t, pkl, map[string][]byte{"0": floattest.Bytes([]float32{1, 2, 3, 4})}))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if got, err := f.Tensors[name].Float32s(); err != nil || !slices.Equal(got, []float32{1, 2, 3, 4}) {
			t.Errorf("%s: %v %v", name, got, err)
		}
	}
}
