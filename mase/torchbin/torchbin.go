// Package torchbin reads PyTorch state dicts saved by torch.save
// (HuggingFace's pytorch_model.bin) into safetensors Files, without running
// the pickle.
package torchbin

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/big"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/safetensors"
)

// The reader unpickles with gopickle's Unpickler, which interprets the
// pickle opcodes in Go and never runs Python; on top of that only the
// globals a state dict needs are resolved (tensor rebuilders, storage
// types, OrderedDict), so a pickle naming anything else (os.system,
// builtins.eval, ...) is refused before a single tensor is read. Before
// gopickle sees it, checkPickle walks the pickle once and refuses what would
// make gopickle allocate more than the input holds or panic (see pickle.go).
// Views are checked against their storage with overflow-checked arithmetic,
// and every byte the loader allocates is counted against
// limits.MaxModelBytes and the memory available.

// torchStorageTypes maps the storage classes torch.save pickles to element
// types.
var torchStorageTypes = map[string]safetensors.DType{
	"FloatStorage": safetensors.F32, "HalfStorage": safetensors.F16, "BFloat16Storage": safetensors.BF16, "DoubleStorage": safetensors.F64,
	"LongStorage": safetensors.I64, "IntStorage": safetensors.I32, "CharStorage": safetensors.I8, "ByteStorage": safetensors.U8, "BoolStorage": safetensors.Bool,
}

// ReadFile reads a PyTorch state dict saved by torch.save (the zip
// archive of PyTorch 1.6 and later, as HuggingFace's pytorch_model.bin) into
// a safetensors File: every tensor of the dict under its name, converted to a
// contiguous little-endian tensor. Tensors sharing a storage (tied
// weights), storage offsets and strided views are supported.
//
// The file must be a regular file (or a symlink to one) within
// limits.Weights.
func ReadFile(path string) (*safetensors.File, error) {
	data, err := limits.ReadFile(path, limits.Weights)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse is ReadFile for the file's bytes.
func Parse(data []byte) (*safetensors.File, error) {
	return parse(data, limits.MaxModelBytes)
}

// parse is Parse with maxBytes in place of limits.MaxModelBytes for the
// storages read and for the tensors made from them.
func parse(data []byte, maxBytes int64) (*safetensors.File, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if len(data) > 0 && (data[0] == 0x80 || data[0] == 'c') {
			return nil, errors.New("not a zip archive: the legacy torch.save format (PyTorch before 1.6) is not supported; re-save it with a recent PyTorch, or use model.safetensors")
		}
		return nil, errors.New("not a PyTorch checkpoint: torch.save writes a zip archive with data.pkl, and this file is not a zip archive")
	}
	entries := map[string]*zip.File{}
	var pkl *zip.File
	prefix := ""
	for _, f := range zr.File {
		entries[f.Name] = f
		dir, base := path.Split(f.Name)
		switch base {
		case "constants.pkl":
			return nil, errors.New("a TorchScript archive (torch.jit.save), not a state dict: save the model's state_dict() with torch.save")
		case "data.pkl":
			if pkl == nil || len(dir) < len(prefix) {
				pkl, prefix = f, dir
			}
		}
	}
	if pkl == nil {
		return nil, errors.New("not a PyTorch checkpoint: the zip archive has no data.pkl")
	}
	if pkl.UncompressedSize64 > limits.MaxPickleBytes {
		return nil, fmt.Errorf("data.pkl is %d bytes, more than the %s a state dict needs (limits.MaxPickleBytes)", pkl.UncompressedSize64, limits.Bytes(limits.MaxPickleBytes))
	}
	raw, err := readZipEntry(pkl, int64(pkl.UncompressedSize64))
	if err != nil {
		return nil, fmt.Errorf("reading data.pkl: %w", err)
	}
	ld := newLoader(entries, prefix, maxBytes)
	obj, err := ld.unpickle(raw)
	if err != nil {
		return nil, err
	}
	return ld.stateDict(obj)
}

// newLoader is a loader for the archive entries under prefix that reads
// at most maxBytes of storages and makes at most maxBytes of tensors.
func newLoader(entries map[string]*zip.File, prefix string, maxBytes int64) *torchLoader {
	return &torchLoader{
		entries: entries, prefix: prefix, storages: map[string]*torchStorage{},
		stored:  limits.NewBudget("the checkpoint's storages", maxBytes),
		tensors: limits.NewBudget("the checkpoint's tensors", maxBytes),
	}
}

// unpickle checks the pickle (checkPickle), then runs gopickle on it with
// the loader's globals and storages.
func (ld *torchLoader) unpickle(raw []byte) (any, error) {
	if err := checkPickle(raw); err != nil {
		return nil, fmt.Errorf("data.pkl: %w", err)
	}
	u := pickle.NewUnpickler(bytes.NewReader(raw))
	u.FindClass = ld.findClass
	u.PersistentLoad = ld.persistentLoad
	obj, err := u.Load()
	if err != nil {
		return nil, fmt.Errorf("unpickling data.pkl: %s", clipTo(err.Error(), 500))
	}
	return obj, nil
}

// readZipEntry reads a whole entry, checking it holds want bytes.
func readZipEntry(f *zip.File, want int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, want)
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// torchLoader resolves the globals and persistent ids of one archive.
type torchLoader struct {
	entries  map[string]*zip.File
	prefix   string
	storages map[string]*torchStorage
	// stored counts the storages read, tensors the tensors made from them.
	stored, tensors *limits.Budget
}

// torchStorageType is a pickled storage class (torch.FloatStorage, ...).
type torchStorageType struct{ dtype safetensors.DType }

// torchStorage is one storage's raw little-endian bytes.
type torchStorage struct {
	dtype safetensors.DType
	data  []byte
}

// torchTensor is a tensor as _rebuild_tensor_v2 describes it: a view of a
// storage, gathered (and checked) once the state dict names it. It is used
// by pointer: the unpickler may use it as a map key.
type torchTensor struct {
	storage      *torchStorage
	offset       int64
	size, stride []int64
}

// torchRebuild is torch._utils._rebuild_tensor_v2.
type torchRebuild struct{}

// torchRebuildParameter is torch._utils._rebuild_parameter.
type torchRebuildParameter struct{}

func (ld *torchLoader) findClass(module, name string) (any, error) {
	switch module {
	case "torch._utils":
		switch name {
		case "_rebuild_tensor_v2":
			return torchRebuild{}, nil
		case "_rebuild_parameter":
			return torchRebuildParameter{}, nil
		}
	case "torch":
		if dt, ok := torchStorageTypes[name]; ok {
			return torchStorageType{dt}, nil
		}
	case "collections":
		if name == "OrderedDict" {
			return &types.OrderedDictClass{}, nil
		}
	}
	return nil, fmt.Errorf("refusing the pickle global %s.%s: a state dict holds only tensors, storages and dicts (allowed: torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter, torch.*Storage, collections.OrderedDict)", clip(module), clip(name))
}

func (ld *torchLoader) persistentLoad(id any) (any, error) {
	const want = "want ('storage', a torch.*Storage type, key, location, numel)"
	tup, ok := id.(*types.Tuple)
	if !ok || tup.Len() < 5 {
		return nil, fmt.Errorf("persistent id %s: %s", describe(id), want)
	}
	kind, _ := tup.Get(0).(string)
	st, okType := tup.Get(1).(torchStorageType)
	key, okKey := tup.Get(2).(string)
	numel, okNumel := toInt(tup.Get(4))
	if kind != "storage" || !okType || !okKey || !okNumel || numel < 0 {
		return nil, fmt.Errorf("persistent id %s: %s", describe(id), want)
	}
	if s, ok := ld.storages[key]; ok {
		return s, nil
	}
	entry, ok := ld.entries[ld.prefix+"data/"+key]
	if !ok {
		return nil, fmt.Errorf("storage %q: no data/%s in the archive", clip(key), clip(key))
	}
	size, ok := limits.Mul(numel, int64(st.dtype.Size()))
	if !ok || uint64(size) > entry.UncompressedSize64 {
		need := "more than 2^63"
		if ok {
			need = fmt.Sprint(size)
		}
		return nil, fmt.Errorf("storage %q: %d elements of %s need %s bytes, the archive holds %d", clip(key), numel, st.dtype, need, entry.UncompressedSize64)
	}
	if err := ld.stored.Take(size); err != nil {
		return nil, fmt.Errorf("storage %q: %w", clip(key), err)
	}
	data, err := readZipEntry(entry, size)
	if err != nil {
		return nil, fmt.Errorf("storage %q: %w", clip(key), err)
	}
	s := &torchStorage{dtype: st.dtype, data: data}
	ld.storages[key] = s
	return s, nil
}

// Call describes a tensor from (storage, storage_offset, size, stride,
// requires_grad, backward_hooks[, metadata]); the view is checked and
// gathered when the state dict names it (torchLoader.gather).
func (torchRebuild) Call(args ...any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: %d arguments, want at least 4 (storage, storage_offset, size, stride)", len(args))
	}
	s, ok := args[0].(*torchStorage)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: the first argument is %s, not a storage", describe(args[0]))
	}
	offset, ok := toInt(args[1])
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: the storage offset is %s, not a 64-bit integer", describe(args[1]))
	}
	size, err := intTuple(args[2])
	if err != nil {
		return nil, fmt.Errorf("_rebuild_tensor_v2: size: %w", err)
	}
	stride, err := intTuple(args[3])
	if err != nil {
		return nil, fmt.Errorf("_rebuild_tensor_v2: stride: %w", err)
	}
	if len(size) != len(stride) {
		return nil, fmt.Errorf("_rebuild_tensor_v2: %d sizes but %d strides (want one stride per dimension)", len(size), len(stride))
	}
	return &torchTensor{storage: s, offset: offset, size: size, stride: stride}, nil
}

// Call unwraps a Parameter into its tensor.
func (torchRebuildParameter) Call(args ...any) (any, error) {
	if len(args) < 1 {
		return nil, errors.New("_rebuild_parameter: no tensor")
	}
	if _, ok := args[0].(*torchTensor); !ok {
		return nil, fmt.Errorf("_rebuild_parameter: the first argument is %s, not a tensor", describe(args[0]))
	}
	return args[0], nil
}

// extent checks the view against its storage and returns its number of
// elements: sizes, strides and the offset must be non-negative, and the
// last element the view reaches, offset + Σ (size−1)·stride, must lie
// inside the storage. Every product and sum is overflow-checked.
func (t *torchTensor) extent() (int64, error) {
	if t.offset < 0 {
		return 0, fmt.Errorf("storage offset %d is negative (allowed: 0 or more)", t.offset)
	}
	n := int64(1)
	for i, d := range t.size {
		if d < 0 {
			return 0, fmt.Errorf("size %v has the negative dimension %d (allowed: 0 or more)", t.size, d)
		}
		if t.stride[i] < 0 {
			return 0, fmt.Errorf("stride %v has the negative stride %d (allowed: 0 or more; torch.save never writes one)", t.stride, t.stride[i])
		}
		var ok bool
		if n, ok = limits.Mul(n, d); !ok {
			return 0, fmt.Errorf("size %v has more than 2^63 elements", t.size)
		}
	}
	if n == 0 {
		return 0, nil
	}
	avail := int64(len(t.storage.data) / t.storage.dtype.Size())
	last := t.offset
	for i, d := range t.size {
		step, ok1 := limits.Mul(d-1, t.stride[i])
		sum, ok2 := limits.Add(last, step)
		if !ok1 || !ok2 {
			return 0, fmt.Errorf("a view of size %v, stride %v at offset %d reaches past element 2^63 of a storage of %d elements (every element must lie inside the storage)", t.size, t.stride, t.offset, avail)
		}
		last = sum
	}
	if last >= avail {
		return 0, fmt.Errorf("a view of size %v, stride %v at offset %d reaches element %d of a storage of %d elements (every element must lie inside the storage)", t.size, t.stride, t.offset, last, avail)
	}
	return n, nil
}

// gather copies the view into a contiguous row-major tensor, after extent
// has checked it and the loader's budget has room for the copy.
func (ld *torchLoader) gather(name string, t *torchTensor) (*safetensors.Tensor, error) {
	n, err := t.extent()
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", clip(name), err)
	}
	es := int64(t.storage.dtype.Size())
	nbytes, ok := limits.Mul(n, es)
	if !ok {
		return nil, fmt.Errorf("tensor %q: %d elements of %s are more than 2^63 bytes", clip(name), n, t.storage.dtype)
	}
	if err := ld.tensors.Take(nbytes); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", clip(name), err)
	}
	shape := make([]int, len(t.size))
	for i, d := range t.size {
		shape[i] = int(d)
	}
	out := make([]byte, nbytes)
	if n == 0 {
		return &safetensors.Tensor{DType: t.storage.dtype, Shape: shape, Data: out}, nil
	}
	src := t.storage.data
	contiguous := true
	want := int64(1)
	for i := len(t.size) - 1; i >= 0; i-- {
		if t.size[i] != 1 && t.stride[i] != want {
			contiguous = false
		}
		want *= t.size[i] // every size is at least 1: at most n, no overflow
	}
	if contiguous {
		copy(out, src[t.offset*es:])
		return &safetensors.Tensor{DType: t.storage.dtype, Shape: shape, Data: out}, nil
	}
	// Every index below is at most the last element extent checked.
	idx := make([]int64, len(t.size))
	for k := int64(0); k < n; k++ {
		at := t.offset
		for i, v := range idx {
			at += v * t.stride[i]
		}
		copy(out[k*es:(k+1)*es], src[at*es:(at+1)*es])
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < t.size[i] {
				break
			}
			idx[i] = 0
		}
	}
	return &safetensors.Tensor{DType: t.storage.dtype, Shape: shape, Data: out}, nil
}

// stateDict turns the unpickled object into a File: a dict from names to
// tensors, each gathered from its storage.
func (ld *torchLoader) stateDict(obj any) (*safetensors.File, error) {
	f := &safetensors.File{Tensors: map[string]*safetensors.Tensor{}}
	add := func(k, v any) error {
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("a state dict key is %s, not a string", describe(k))
		}
		tt, ok := v.(*torchTensor)
		if !ok {
			return fmt.Errorf("state dict entry %q is %s, not a tensor", clip(name), describe(v))
		}
		t, err := ld.gather(name, tt)
		if err != nil {
			return err
		}
		f.Tensors[name] = t
		return nil
	}
	switch d := obj.(type) {
	case *types.OrderedDict:
		for e := d.List.Front(); e != nil; e = e.Next() {
			entry := e.Value.(*types.OrderedDictEntry)
			if err := add(entry.Key, entry.Value); err != nil {
				return nil, err
			}
		}
	case *types.Dict:
		for _, entry := range *d {
			if err := add(entry.Key, entry.Value); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("the pickle holds %s, not a state dict (a dict of tensors)", describe(obj))
	}
	return f, nil
}

// toInt reads a pickled integer that fits in int64.
func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), true
		}
	}
	return 0, false
}

// intTuple reads a tuple of at most limits.MaxTensorDims integers.
func intTuple(v any) ([]int64, error) {
	tup, ok := v.(*types.Tuple)
	if !ok {
		return nil, fmt.Errorf("%s is not a tuple", describe(v))
	}
	if tup.Len() > limits.MaxTensorDims {
		return nil, fmt.Errorf("%d dimensions (allowed: up to %d)", tup.Len(), limits.MaxTensorDims)
	}
	out := make([]int64, tup.Len())
	for i := range out {
		n, ok := toInt(tup.Get(i))
		if !ok {
			return nil, fmt.Errorf("element %d is %s, not a 64-bit integer", i, describe(tup.Get(i)))
		}
		out[i] = n
	}
	return out, nil
}

// describe names a pickled value for an error, briefly: a value of a
// hostile pickle may be megabytes long.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return fmt.Sprintf("the string %q", clip(x))
	case int, bool, float64:
		return fmt.Sprint(x)
	case *big.Int:
		return clip(x.String())
	case *types.Tuple:
		return fmt.Sprintf("a tuple of %d items", x.Len())
	case *torchTensor:
		return "a tensor"
	case *torchStorage:
		return "a storage"
	}
	return fmt.Sprintf("a %T", v)
}

var lineBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// clip shortens s to at most 120 bytes for an error message.
func clip(s string) string { return clipTo(s, 120) }

// clipTo shortens s to at most max bytes (and an ellipsis), cutting
// between runes, and escapes its line breaks: errors are one line.
func clipTo(s string, max int) string {
	s = lineBreaks.Replace(s)
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
