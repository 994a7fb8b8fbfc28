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
	"math"
	"math/big"
	"os"
	"path"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/gomase/gomase/mase/safetensors"
)

// The reader unpickles with gopickle's Unpickler, which interprets the
// pickle opcodes in Go and never runs Python; on top of that only the
// globals a state dict needs are resolved (tensor rebuilders, storage
// types, OrderedDict), so a pickle naming anything else (os.system,
// builtins.eval, ...) is refused before a single tensor is read.

// maxTorchPickle bounds the size of a state dict's data.pkl (the pickle
// holds names and tensor descriptions, not values).
const maxTorchPickle = 64 << 20

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
func ReadFile(path string) (*safetensors.File, error) {
	data, err := os.ReadFile(path)
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
	if pkl.UncompressedSize64 > maxTorchPickle {
		return nil, fmt.Errorf("data.pkl is %d bytes, more than the %d a state dict needs", pkl.UncompressedSize64, maxTorchPickle)
	}
	raw, err := readZipEntry(pkl, int64(pkl.UncompressedSize64))
	if err != nil {
		return nil, fmt.Errorf("reading data.pkl: %w", err)
	}
	ld := &torchLoader{entries: entries, prefix: prefix, storages: map[string]*torchStorage{}}
	u := pickle.NewUnpickler(bytes.NewReader(raw))
	u.FindClass = ld.findClass
	u.PersistentLoad = ld.persistentLoad
	obj, err := u.Load()
	if err != nil {
		return nil, fmt.Errorf("unpickling data.pkl: %w", err)
	}
	return stateDict(obj)
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
}

// torchStorageType is a pickled storage class (torch.FloatStorage, ...).
type torchStorageType struct{ dtype safetensors.DType }

// torchStorage is one storage's raw little-endian bytes.
type torchStorage struct {
	dtype safetensors.DType
	data  []byte
}

// torchTensor is a rebuilt tensor, already contiguous.
type torchTensor struct{ t *safetensors.Tensor }

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
	return nil, fmt.Errorf("refusing the pickle global %s.%s: a state dict holds only tensors, storages and dicts (allowed: torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter, torch.*Storage, collections.OrderedDict)", module, name)
}

func (ld *torchLoader) persistentLoad(id any) (any, error) {
	tup, ok := id.(*types.Tuple)
	if !ok || tup.Len() < 5 {
		return nil, fmt.Errorf("persistent id %v: want ('storage', type, key, location, numel)", id)
	}
	kind, _ := tup.Get(0).(string)
	st, okType := tup.Get(1).(torchStorageType)
	key, okKey := tup.Get(2).(string)
	numel, okNumel := toInt(tup.Get(4))
	if kind != "storage" || !okType || !okKey || !okNumel || numel < 0 {
		return nil, fmt.Errorf("persistent id %v: want ('storage', type, key, location, numel)", id)
	}
	if s, ok := ld.storages[key]; ok {
		return s, nil
	}
	entry, ok := ld.entries[ld.prefix+"data/"+key]
	if !ok {
		return nil, fmt.Errorf("storage %q: no data/%s in the archive", key, key)
	}
	size := int64(numel) * int64(st.dtype.Size())
	if numel > math.MaxInt32*4 || int64(entry.UncompressedSize64) < size {
		return nil, fmt.Errorf("storage %q: %d elements of %s need %d bytes, the archive holds %d", key, numel, st.dtype, size, entry.UncompressedSize64)
	}
	data, err := readZipEntry(entry, size)
	if err != nil {
		return nil, fmt.Errorf("storage %q: %w", key, err)
	}
	s := &torchStorage{dtype: st.dtype, data: data}
	ld.storages[key] = s
	return s, nil
}

// Call rebuilds a tensor from (storage, offset, size, stride,
// requires_grad, backward_hooks[, metadata]).
func (torchRebuild) Call(args ...any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: %d arguments, want at least 4", len(args))
	}
	s, ok := args[0].(*torchStorage)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: the first argument is %T, not a storage", args[0])
	}
	offset, okOff := toInt(args[1])
	shape, errShape := intTuple(args[2])
	stride, errStride := intTuple(args[3])
	if !okOff || errShape != nil || errStride != nil || len(shape) != len(stride) {
		return nil, fmt.Errorf("_rebuild_tensor_v2: bad offset, size or stride (%v, %v, %v)", args[1], args[2], args[3])
	}
	t, err := gatherStrided(s, offset, shape, stride)
	if err != nil {
		return nil, err
	}
	return torchTensor{t}, nil
}

// Call unwraps a Parameter into its tensor.
func (torchRebuildParameter) Call(args ...any) (any, error) {
	if len(args) < 1 {
		return nil, errors.New("_rebuild_parameter: no tensor")
	}
	if _, ok := args[0].(torchTensor); !ok {
		return nil, fmt.Errorf("_rebuild_parameter: the first argument is %T, not a tensor", args[0])
	}
	return args[0], nil
}

// gatherStrided copies the view (offset, shape, stride) of s into a
// contiguous row-major tensor, checking every element is inside s.
func gatherStrided(s *torchStorage, offset int, shape, stride []int) (*safetensors.Tensor, error) {
	es := s.dtype.Size()
	n, err := safetensors.NumElements(shape)
	if err != nil {
		return nil, err
	}
	avail := len(s.data) / es
	if n == 0 {
		return &safetensors.Tensor{DType: s.dtype, Shape: shape, Data: []byte{}}, nil
	}
	// The largest element index the view reaches must be in the storage.
	last := offset
	for i, d := range shape {
		if stride[i] < 0 {
			return nil, fmt.Errorf("negative stride %v", stride)
		}
		last += (d - 1) * stride[i]
	}
	if offset < 0 || last >= avail {
		return nil, fmt.Errorf("a view of shape %v, stride %v at offset %d reaches element %d of a storage of %d", shape, stride, offset, last, avail)
	}
	out := make([]byte, n*es)
	contiguous := true
	want := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && stride[i] != want {
			contiguous = false
		}
		want *= shape[i]
	}
	if contiguous {
		copy(out, s.data[offset*es:(offset+n)*es])
		return &safetensors.Tensor{DType: s.dtype, Shape: shape, Data: out}, nil
	}
	idx := make([]int, len(shape))
	for k := 0; k < n; k++ {
		src := offset
		for i, v := range idx {
			src += v * stride[i]
		}
		copy(out[k*es:(k+1)*es], s.data[src*es:(src+1)*es])
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return &safetensors.Tensor{DType: s.dtype, Shape: shape, Data: out}, nil
}

// stateDict turns the unpickled object into a File: a dict from names to
// tensors.
func stateDict(obj any) (*safetensors.File, error) {
	f := &safetensors.File{Tensors: map[string]*safetensors.Tensor{}}
	add := func(k, v any) error {
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("a state dict key is %T, not a string", k)
		}
		t, ok := v.(torchTensor)
		if !ok {
			return fmt.Errorf("state dict entry %q is %T, not a tensor", name, v)
		}
		f.Tensors[name] = t.t
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
		return nil, fmt.Errorf("the pickle holds a %T, not a state dict (a dict of tensors)", obj)
	}
	return f, nil
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case *big.Int:
		if x.IsInt64() && x.Int64() <= math.MaxInt {
			return int(x.Int64()), true
		}
	}
	return 0, false
}

func intTuple(v any) ([]int, error) {
	tup, ok := v.(*types.Tuple)
	if !ok {
		return nil, fmt.Errorf("%T is not a tuple", v)
	}
	out := make([]int, tup.Len())
	for i := range out {
		n, ok := toInt(tup.Get(i))
		if !ok || n < 0 {
			return nil, fmt.Errorf("tuple %v holds a non-integer", v)
		}
		out[i] = n
	}
	return out, nil
}
