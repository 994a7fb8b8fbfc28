package safetensors

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
	"strings"
	"testing"

	"github.com/gomase/gomase/internal/floattest"
)

// halfOracle computes a binary16 value from its definition, in float64.
func halfOracle(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	man := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(man, -24)
	case 0x1f:
		if man == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+man/1024, exp-15)
}

func TestHalfToFloat32AllValues(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := halfToFloat32(h)
		want := halfOracle(h)
		if math.IsNaN(want) {
			b := math.Float32bits(got)
			if !math.IsNaN(float64(got)) || b>>31 != uint32(h>>15) || (b>>13)&0x3ff != uint32(h&0x3ff) {
				t.Fatalf("half %#04x → %#08x, want a NaN with the same sign and payload", h, b)
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("half %#04x → %v (%#08x), want %v", h, got, math.Float32bits(got), want)
		}
	}
}

func TestFloat32sConversions(t *testing.T) {
	le16 := func(v ...uint16) []byte {
		b := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], x)
		}
		return b
	}
	bf := &Tensor{DType: BF16, Shape: []int{4}, Data: le16(0x3f80, 0xc000, 0x4049, 0xff80)}
	got, err := bf.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, -2, 3.140625, float32(math.Inf(-1))}; !slices.Equal(got, want) {
		t.Errorf("BF16 → %v, want %v", got, want)
	}
	h := &Tensor{DType: F16, Shape: []int{2, 2}, Data: le16(0x3c00, 0xc000, 0x7bff, 0x0001)}
	got, err = h.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, -2, 65504, float32(math.Ldexp(1, -24))}; !slices.Equal(got, want) {
		t.Errorf("F16 → %v, want %v", got, want)
	}
	d := &Tensor{DType: F64, Shape: []int{}, Data: binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.1))}
	if got, err = d.Float32s(); err != nil || got[0] != float32(0.1) {
		t.Errorf("F64 → %v, %v", got, err)
	}
	i64 := &Tensor{DType: I64, Shape: []int{2}, Data: binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 7), uint64(1<<63))}
	if _, err := i64.Float32s(); err == nil || !strings.Contains(err.Error(), "allowed: F32, F16, BF16, F64") {
		t.Errorf("I64 as float32: %v", err)
	}
	ints, err := i64.Int64s()
	if err != nil || ints[0] != 7 || ints[1] != math.MinInt64 {
		t.Errorf("I64 → %v, %v", ints, err)
	}
	i32, _ := NewI32([]int{3}, []int32{-1, 0, math.MaxInt32})
	if ints, err = i32.Int64s(); err != nil || !slices.Equal(ints, []int64{-1, 0, math.MaxInt32}) {
		t.Errorf("I32 → %v, %v", ints, err)
	}
	if _, err := i32.Float32s(); err == nil {
		t.Error("I32 read as float32")
	}
	short := &Tensor{DType: F32, Shape: []int{3}, Data: make([]byte, 8)}
	if _, err := short.Float32s(); err == nil || !strings.Contains(err.Error(), "needs 12 bytes") {
		t.Errorf("short data: %v", err)
	}
	if _, err := NewF32([]int{2, 2}, []float32{1}); err == nil || !strings.Contains(err.Error(), "needs 4 values, got 1") {
		t.Errorf("NewF32 count: %v", err)
	}
}

func TestFileRoundTripBitExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := floattest.Random(3*7, rng)
	a, err := NewF32([]int{3, 7}, vals)
	if err != nil {
		t.Fatal(err)
	}
	scalar, _ := NewF32(nil, []float32{float32(math.Copysign(0, -1))})
	empty, _ := NewF32([]int{0, 4}, nil)
	ints, _ := NewI32([]int{5}, []int32{math.MinInt32, -1, 0, 1, math.MaxInt32})
	f := &File{Tensors: map[string]*Tensor{"a.weight": a, "s": scalar, "e": empty, "i": ints},
		Metadata: map[string]string{"format": "pt", "note": "ünïcode"}}
	data, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	hlen := binary.LittleEndian.Uint64(data)
	if hlen%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", hlen)
	}
	g, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Names(), []string{"a.weight", "e", "i", "s"}) || g.Metadata["note"] != "ünïcode" || g.Metadata["format"] != "pt" {
		t.Fatalf("names %v metadata %v", g.Names(), g.Metadata)
	}
	got, err := g.Tensors["a.weight"].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(floattest.Bits(got), floattest.Bits(vals)) {
		t.Errorf("F32 values changed:\n got %x\nwant %x", floattest.Bits(got), floattest.Bits(vals))
	}
	if s, _ := g.Tensors["s"].Float32s(); len(g.Tensors["s"].Shape) != 0 || math.Float32bits(s[0]) != 0x80000000 {
		t.Errorf("scalar -0: shape %v bits %x", g.Tensors["s"].Shape, floattest.Bits(s))
	}
	if e := g.Tensors["e"]; !slices.Equal(e.Shape, []int{0, 4}) || len(e.Data) != 0 {
		t.Errorf("empty tensor %+v", e)
	}
	if iv, _ := g.Tensors["i"].Int64s(); !slices.Equal(iv, []int64{math.MinInt32, -1, 0, 1, math.MaxInt32}) {
		t.Errorf("I32 values %v", iv)
	}
	again, err := g.Encode()
	if err != nil || !bytes.Equal(again, data) {
		t.Errorf("re-encoding differs (%v)", err)
	}
}

func TestEncodeRejectsBadTensors(t *testing.T) {
	for name, f := range map[string]*File{
		"unknown dtype": {Tensors: map[string]*Tensor{"x": {DType: "Q4", Shape: []int{1}, Data: []byte{0}}}},
		"needs 8 bytes": {Tensors: map[string]*Tensor{"x": {DType: F32, Shape: []int{2}, Data: []byte{0}}}},
		"not allowed":   {Tensors: map[string]*Tensor{"__metadata__": {DType: U8, Shape: []int{1}, Data: []byte{0}}}},
	} {
		if _, err := f.Encode(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// rawFile assembles a safetensors file from a header text and a data
// buffer, without the package's writer.
func rawFile(header string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func TestParseRejectsCorruptFiles(t *testing.T) {
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	if _, err := Parse(rawFile(ok, make([]byte, 8))); err != nil {
		t.Fatalf("valid file rejected: %v", err)
	}
	if _, err := Parse(rawFile(ok+"    ", make([]byte, 8))); err != nil {
		t.Fatalf("space padding rejected: %v", err)
	}
	huge := binary.LittleEndian.AppendUint64(nil, 1<<40)
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"short prefix", []byte{1, 2, 3}, "shorter than the 8-byte header length prefix"},
		{"huge header length", append(huge, make([]byte, 64)...), "exceeds the"},
		{"header past end", rawFile(ok, make([]byte, 8))[:30], "runs past the end"},
		{"not json", rawFile("[1,2]", nil), "does not start with '{'"},
		{"bad json", rawFile(`{"a":{"dtype":"F32",,}}`, nil), "header JSON"},
		{"unterminated json", rawFile(`{"a":{"dtype":"F32"`, nil), "header JSON"},
		{"trailing garbage", rawFile(ok+`x`, make([]byte, 8)), "header JSON"},
		{"unknown dtype", rawFile(`{"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2)), `unknown dtype "F8" (allowed: F64, F32`},
		{"missing dtype", rawFile(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), "no dtype"},
		{"missing shape", rawFile(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, make([]byte, 4)), "no shape"},
		{"unknown field", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, make([]byte, 4)), "unknown field"},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, make([]byte, 4)), "invalid dimension -1"},
		{"one offset", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, make([]byte, 4)), "data_offsets must be [begin, end]"},
		{"reversed offsets", rawFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, make([]byte, 4)), "0 <= begin <= end"},
		{"wrong dtype size", rawFile(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), "needs 4 bytes (2 elements × 2)"},
		{"offsets past data", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 6)), "truncated"},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "overlaps"},
		{"gap", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "bytes [0, 4) of the data buffer"},
		{"uncovered tail", rawFile(ok, make([]byte, 12)), "bytes [8, 12) at the end"},
		{"duplicate name", rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)), `names "a" twice`},
		{"metadata not strings", rawFile(`{"__metadata__":{"n":1}}`, nil), `__metadata__["n"] must be a string, got a number`},
		{"metadata not object", rawFile(`{"__metadata__":[]}`, nil), "must be a JSON object of strings"},
		{"invalid utf8", rawFile("{\"\xff\":1}", nil), "UTF-8"},
	}
	for _, c := range cases {
		_, err := Parse(c.file)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want ErrInvalid mentioning %q", c.name, err, c.want)
		}
	}
}

func TestParseRejectsEveryTruncation(t *testing.T) {
	a, _ := NewF32([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	b, _ := NewI32([]int{2}, []int32{7, 8})
	data, err := (&File{Tensors: map[string]*Tensor{"a": a, "b": b}, Metadata: map[string]string{"k": "v"}}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(data); n++ {
		if _, err := Parse(data[:n]); !errors.Is(err, ErrInvalid) {
			t.Fatalf("file cut to %d of %d bytes: err = %v, want ErrInvalid", n, len(data), err)
		}
	}
	// The header is plain JSON: two tensors and the metadata.
	var hdr map[string]json.RawMessage
	hlen := binary.LittleEndian.Uint64(data)
	if err := json.Unmarshal(data[8:8+hlen], &hdr); err != nil || len(hdr) != 3 {
		t.Fatalf("header %s: %v", data[8:8+hlen], err)
	}
}

func TestWriteFileReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	a, _ := NewF32([]int{2}, []float32{1, -2})
	if err := WriteFile(path, &File{Tensors: map[string]*Tensor{"a": a}, Metadata: map[string]string{"format": "pt"}}); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Tensors["a"]; got == nil || !bytes.Equal(got.Data, a.Data) || f.Metadata["format"] != "pt" {
		t.Errorf("read back %+v, metadata %v", got, f.Metadata)
	}
	bad := &File{Tensors: map[string]*Tensor{"x": {DType: F32, Shape: []int{2}}}}
	if err := WriteFile(filepath.Join(dir, "bad.safetensors"), bad); err == nil || !strings.Contains(err.Error(), "writing safetensors file "+dir) {
		t.Errorf("bad tensor: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "bad.safetensors")); err == nil || !strings.Contains(err.Error(), "reading safetensors file") {
		t.Errorf("a failed write left a file, or the missing file's error is %v", err)
	}
	if err := os.WriteFile(path, []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "safetensors file "+path) {
		t.Errorf("corrupt file: %v", err)
	}
}

func TestNumElements(t *testing.T) {
	for _, c := range []struct {
		shape []int
		n     int
		err   string
	}{
		{nil, 1, ""}, {[]int{2, 3}, 6, ""}, {[]int{4, 0, 5}, 0, ""},
		{[]int{2, -1}, 0, "negative dimension"}, {[]int{math.MaxInt, 2}, 0, "too many elements"},
	} {
		n, err := NumElements(c.shape)
		if c.err == "" && (err != nil || n != c.n) || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("NumElements(%v) = %d, %v; want %d, %q", c.shape, n, err, c.n, c.err)
		}
	}
}

func TestAbbreviate(t *testing.T) {
	if got := Abbreviate([]byte(`{"a":1}`)); got != `{"a":1}` {
		t.Errorf("short JSON changed: %s", got)
	}
	if got := Abbreviate([]byte(strings.Repeat("x", 100))); len(got) != 80 || !strings.HasSuffix(got, "...") {
		t.Errorf("long JSON: %q", got)
	}
}
