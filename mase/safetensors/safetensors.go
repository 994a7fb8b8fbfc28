// Package safetensors reads and writes the safetensors format (the format
// HuggingFace uses for model.safetensors): named little-endian tensors
// behind a JSON header.
//
// It is written on the standard library. A file is parsed whole and
// validated before any tensor is returned (Parse, ReadFile); File.Encode
// and WriteFile write one, WriteFile atomically (temporary file in the same
// directory, fsync, rename).
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/limits"
)

// ErrInvalid is wrapped by every error about malformed safetensors data
// (truncated file, bad header, bad offsets), so callers can test for it
// with errors.Is.
var ErrInvalid = errors.New("invalid safetensors data")

// MaxHeaderSize is the largest JSON header accepted (100 MB, the limit of
// the reference implementation); a larger length prefix means a corrupt or
// foreign file.
const MaxHeaderSize = 100 << 20

// metadataKey is the reserved header entry holding string metadata.
const metadataKey = "__metadata__"

// DType is a safetensors element type, spelled as in the header ("F32").
type DType string

// The element types of the safetensors format that this package knows.
const (
	F64  DType = "F64"
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	I8   DType = "I8"
	U8   DType = "U8"
	Bool DType = "BOOL"
)

// allowedDTypes lists the known element types for error messages.
const allowedDTypes = "F64, F32, F16, BF16, I64, I32, I8, U8, BOOL"

// Size returns the size of one element in bytes, or 0 for an unknown type.
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16:
		return 2
	case I8, U8, Bool:
		return 1
	}
	return 0
}

// Tensor is one tensor of a safetensors file: its element type, shape and
// raw little-endian data.
type Tensor struct {
	DType DType
	// Shape is the tensor's dimensions; empty for a scalar.
	Shape []int
	// Data holds NumElements × DType.Size() bytes, little-endian, row-major.
	// Tensors returned by Parse share their Data with the parsed buffer.
	Data []byte
}

// NewF32 returns an F32 tensor holding values (row-major) with the given
// shape; the number of values must match the shape.
func NewF32(shape []int, values []float32) (*Tensor, error) {
	n, err := NumElements(shape)
	if err != nil {
		return nil, err
	}
	if n != len(values) {
		return nil, fmt.Errorf("F32 tensor of shape %v needs %d values, got %d", shape, n, len(values))
	}
	data := make([]byte, 4*n)
	for i, v := range values {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return &Tensor{DType: F32, Shape: slices.Clone(shape), Data: data}, nil
}

// NewI32 returns an I32 tensor holding values (row-major) with the given
// shape; the number of values must match the shape.
func NewI32(shape []int, values []int32) (*Tensor, error) {
	n, err := NumElements(shape)
	if err != nil {
		return nil, err
	}
	if n != len(values) {
		return nil, fmt.Errorf("I32 tensor of shape %v needs %d values, got %d", shape, n, len(values))
	}
	data := make([]byte, 4*n)
	for i, v := range values {
		binary.LittleEndian.PutUint32(data[4*i:], uint32(v))
	}
	return &Tensor{DType: I32, Shape: slices.Clone(shape), Data: data}, nil
}

// NumElements returns the product of the shape (1 for a scalar).
func (t *Tensor) NumElements() int {
	n, _ := NumElements(t.Shape)
	return n
}

// NumElements returns the number of elements of a tensor of the given
// shape (1 for a scalar), rejecting negative dimensions and overflow.
func NumElements(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, fmt.Errorf("shape %v has too many elements", shape)
		}
		n *= d
	}
	return n, nil
}

// check verifies that t's type is known and its data has the right size.
func (t *Tensor) check() error {
	size := t.DType.Size()
	if size == 0 {
		return fmt.Errorf("unknown dtype %q (allowed: %s)", t.DType, allowedDTypes)
	}
	n, err := NumElements(t.Shape)
	if err != nil {
		return err
	}
	if n > math.MaxInt/size {
		return fmt.Errorf("shape %v of %s is too large", t.Shape, t.DType)
	}
	if len(t.Data) != n*size {
		return fmt.Errorf("%s tensor of shape %v needs %d bytes (%d elements × %d), has %d",
			t.DType, t.Shape, n*size, n, size, len(t.Data))
	}
	return nil
}

// Float32s returns the values converted to float32: F32 as is (bit-exact,
// NaN payloads included), F16 and BF16 exactly, F64 rounded to nearest.
// Integer and boolean tensors are refused.
func (t *Tensor) Float32s() ([]float32, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	n := t.NumElements()
	out := make([]float32, n)
	d := t.Data
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		}
	case F16:
		for i := range out {
			out[i] = halfToFloat32(binary.LittleEndian.Uint16(d[2*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(d[2*i:])) << 16)
		}
	case F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(d[8*i:])))
		}
	default:
		return nil, fmt.Errorf("%s tensor cannot be read as float32 (allowed: F32, F16, BF16, F64)", t.DType)
	}
	return out, nil
}

// Int64s returns the values of an integer or boolean tensor (I64, I32, I8,
// U8, BOOL) as int64. Floating-point tensors are refused.
func (t *Tensor) Int64s() ([]int64, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	out := make([]int64, t.NumElements())
	d := t.Data
	switch t.DType {
	case I64:
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(d[8*i:]))
		}
	case I32:
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(d[4*i:])))
		}
	case I8:
		for i := range out {
			out[i] = int64(int8(d[i]))
		}
	case U8, Bool:
		for i := range out {
			out[i] = int64(d[i])
		}
	default:
		return nil, fmt.Errorf("%s tensor cannot be read as integers (allowed: I64, I32, I8, U8, BOOL)", t.DType)
	}
	return out, nil
}

// halfToFloat32 converts an IEEE 754 binary16 value to float32 exactly.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch exp {
	case 0x1f: // Inf and NaN (payload kept in the high mantissa bits)
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: man × 2^-24. Normalise the leading one into bit 10.
		e := int32(-14)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		man &= 0x3ff
		return math.Float32frombits(sign | uint32(e+127)<<23 | man<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// File is the content of a safetensors file: named tensors and string
// metadata.
type File struct {
	// Tensors maps each tensor name to its tensor.
	Tensors map[string]*Tensor
	// Metadata is the header's "__metadata__" entry (nil when absent).
	Metadata map[string]string
}

// Names returns the tensor names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Tensors))
	for k := range f.Tensors {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// headerEntry is one tensor's entry in the JSON header.
type headerEntry struct {
	DType       DType   `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// span is a tensor's byte range in the data buffer, for validation.
type span struct {
	name       string
	begin, end int64
}

// invalid returns an error wrapping ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Parse decodes a whole safetensors file held in data and validates it:
// the header length lies within the data, the header is a JSON object of
// known dtypes, non-negative shapes and offsets, every tensor's byte size is
// its element count × dtype size, and the tensors cover the data buffer
// exactly, without overlaps or gaps. The returned tensors share data.
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, invalid("%d bytes is shorter than the 8-byte header length prefix (truncated file?)", len(data))
	}
	hlen := binary.LittleEndian.Uint64(data[:8])
	rest := uint64(len(data) - 8)
	switch {
	case hlen < 2:
		return nil, invalid("header length %d is too small for a JSON object", hlen)
	case hlen > MaxHeaderSize:
		return nil, invalid("header length %d exceeds the %d-byte limit (corrupt or not a safetensors file)", hlen, MaxHeaderSize)
	case hlen > rest:
		return nil, invalid("header length %d runs past the end of the data (%d bytes follow the length prefix): truncated file", hlen, rest)
	}
	header := data[8 : 8+hlen]
	buf := data[8+hlen:]
	if !utf8.Valid(header) {
		return nil, invalid("header is not valid UTF-8")
	}
	if header[0] != '{' {
		return nil, invalid("header does not start with '{' (got %q): not a safetensors file", header[0])
	}
	f, spans, err := parseHeader(header)
	if err != nil {
		return nil, err
	}
	if err := checkSpans(spans, int64(len(buf))); err != nil {
		return nil, err
	}
	for _, s := range spans {
		t := f.Tensors[s.name]
		t.Data = buf[s.begin:s.end:s.end]
	}
	return f, nil
}

// parseHeader decodes the JSON header, checking each entry on its own.
func parseHeader(header []byte) (*File, []span, error) {
	dec := json.NewDecoder(bytes.NewReader(header))
	if _, err := dec.Token(); err != nil { // the opening '{', checked by the caller
		return nil, nil, invalid("header JSON: %v", err)
	}
	f := &File{Tensors: map[string]*Tensor{}}
	var spans []span
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, invalid("header JSON: %v", jsonErr(err, dec))
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, invalid("header JSON: expected a tensor name, got %v", tok)
		}
		if seen[name] {
			return nil, nil, invalid("header names %q twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, invalid("header JSON at entry %q: %v", name, jsonErr(err, dec))
		}
		if name == metadataKey {
			md, err := parseMetadata(raw)
			if err != nil {
				return nil, nil, err
			}
			f.Metadata = md
			continue
		}
		t, s, err := parseEntry(name, raw)
		if err != nil {
			return nil, nil, err
		}
		f.Tensors[name] = t
		spans = append(spans, s)
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, nil, invalid("header JSON: %v", jsonErr(err, dec))
	}
	// Only padding (spaces, as the format allows) may follow the object.
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, nil, invalid("header JSON: after the object: %v", err)
		}
		return nil, nil, invalid("header JSON: unexpected %v after the header object", tok)
	}
	return f, spans, nil
}

// jsonErr adds the byte offset to a JSON syntax error.
func jsonErr(err error, dec *json.Decoder) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%v (at byte %d of the header)", err, se.Offset)
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("header ends early (at byte %d)", dec.InputOffset())
	}
	return err
}

// parseMetadata decodes the "__metadata__" entry: an object of strings.
func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, invalid("%s must be a JSON object of strings, got %s", metadataKey, Abbreviate(raw))
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, invalid("%s[%q] must be a string, got %s", metadataKey, k, jsonKind(v))
		}
		out[k] = s
	}
	return out, nil
}

// parseEntry decodes and checks one tensor entry of the header.
func parseEntry(name string, raw json.RawMessage) (*Tensor, span, error) {
	var e headerEntry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, span{}, invalid("tensor %q: header entry %s: %v (want {\"dtype\": ..., \"shape\": [...], \"data_offsets\": [begin, end]})", name, Abbreviate(raw), err)
	}
	size := e.DType.Size()
	switch {
	case e.DType == "":
		return nil, span{}, invalid("tensor %q: header entry has no dtype", name)
	case size == 0:
		return nil, span{}, invalid("tensor %q: unknown dtype %q (allowed: %s)", name, e.DType, allowedDTypes)
	case e.Shape == nil:
		return nil, span{}, invalid("tensor %q: header entry has no shape (a scalar has shape [])", name)
	case len(e.DataOffsets) != 2:
		return nil, span{}, invalid("tensor %q: data_offsets must be [begin, end], got %v", name, e.DataOffsets)
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin {
		return nil, span{}, invalid("tensor %q: data_offsets [%d, %d] must satisfy 0 <= begin <= end", name, begin, end)
	}
	shape := make([]int, len(e.Shape))
	for i, d := range e.Shape {
		if d < 0 {
			return nil, span{}, invalid("tensor %q: shape %v has an invalid dimension %d", name, e.Shape, d)
		}
		shape[i] = int(d)
	}
	n, err := NumElements(shape)
	if err != nil || n > math.MaxInt/size {
		return nil, span{}, invalid("tensor %q: shape %v is too large", name, e.Shape)
	}
	if want := int64(n) * int64(size); end-begin != want {
		return nil, span{}, invalid("tensor %q: %s of shape %v needs %d bytes (%d elements × %d), but data_offsets [%d, %d] span %d bytes",
			name, e.DType, shape, want, n, size, begin, end, end-begin)
	}
	return &Tensor{DType: e.DType, Shape: shape}, span{name, begin, end}, nil
}

// checkSpans verifies that the tensors tile the data buffer exactly.
func checkSpans(spans []span, bufLen int64) error {
	sort.Slice(spans, func(i, j int) bool {
		a, b := spans[i], spans[j]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.name < b.name
	})
	var maxEnd int64
	for _, s := range spans {
		maxEnd = max(maxEnd, s.end)
	}
	if maxEnd > bufLen {
		return invalid("the header needs %d data bytes but only %d follow it: truncated file", maxEnd, bufLen)
	}
	var pos int64
	for i, s := range spans {
		if s.begin < pos {
			return invalid("tensor %q (bytes [%d, %d)) overlaps tensor %q (bytes [%d, %d))",
				s.name, s.begin, s.end, spans[i-1].name, spans[i-1].begin, spans[i-1].end)
		}
		if s.begin > pos {
			return invalid("bytes [%d, %d) of the data buffer, before tensor %q, belong to no tensor", pos, s.begin, s.name)
		}
		pos = s.end
	}
	if pos != bufLen {
		return invalid("bytes [%d, %d) at the end of the data buffer belong to no tensor", pos, bufLen)
	}
	return nil
}

// Abbreviate shortens raw JSON to at most 80 bytes for an error message.
func Abbreviate(raw []byte) string {
	s := string(raw)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// ReadFile reads and validates a whole safetensors file: a regular file (or
// a symlink to one) within limits.Weights. Errors name the file and what is
// wrong with it.
func ReadFile(path string) (*File, error) {
	data, err := limits.ReadFile(path, limits.Weights)
	if err != nil {
		return nil, fmt.Errorf("reading safetensors file: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("safetensors file %s: %w", path, err)
	}
	return f, nil
}

// Encode serialises the file: the 8-byte little-endian header length, the
// JSON header (tensors sorted by name, padded with spaces to a multiple of
// 8 bytes) and the tensors' data in the same order. Every tensor is checked
// first (known dtype, data size matching its shape).
func (f *File) Encode() ([]byte, error) {
	names := f.Names()
	header := map[string]any{}
	if len(f.Metadata) > 0 {
		header[metadataKey] = f.Metadata
	}
	var offset int64
	for _, name := range names {
		t := f.Tensors[name]
		if name == "" || name == metadataKey {
			return nil, fmt.Errorf("tensor name %q is not allowed (it must be non-empty and not %s)", name, metadataKey)
		}
		if t == nil {
			return nil, fmt.Errorf("tensor %q is nil", name)
		}
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		shape := make([]int64, len(t.Shape))
		for i, d := range t.Shape {
			shape[i] = int64(d)
		}
		end := offset + int64(len(t.Data))
		header[name] = headerEntry{DType: t.DType, Shape: shape, DataOffsets: []int64{offset, end}}
		offset = end
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return nil, fmt.Errorf("encoding safetensors header: %w", err)
	}
	if pad := (8 - len(hj)%8) % 8; pad > 0 {
		hj = append(hj, strings.Repeat(" ", pad)...)
	}
	out := make([]byte, 8, 8+int64(len(hj))+offset)
	binary.LittleEndian.PutUint64(out, uint64(len(hj)))
	out = append(out, hj...)
	for _, name := range names {
		out = append(out, f.Tensors[name].Data...)
	}
	return out, nil
}

// WriteFile encodes f and writes it to path atomically: a failed write
// leaves any previous file at path unchanged.
func WriteFile(path string, f *File) error {
	data, err := f.Encode()
	if err != nil {
		return fmt.Errorf("writing safetensors file %s: %w", path, err)
	}
	return atomicfile.Write(atomicfile.File{Path: path, Data: data})
}
