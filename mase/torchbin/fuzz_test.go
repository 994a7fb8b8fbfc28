package torchbin

import (
	"archive/zip"
	"bytes"
	"strings"
	"testing"

	"github.com/gomase/gomase/internal/floattest"
	"github.com/gomase/gomase/mase/safetensors"
)

// fuzzMaxBytes bounds what a fuzzed input may make the loader allocate
// (a view of stride 0 may ask for gigabytes legitimately).
const fuzzMaxBytes = 16 << 20

// checkTensors fails when a tensor's data does not match its shape.
func checkTensors(t *testing.T, f *safetensors.File) {
	for name, tt := range f.Tensors {
		n, err := safetensors.NumElements(tt.Shape)
		if err != nil || len(tt.Data) != n*tt.DType.Size() {
			t.Fatalf("tensor %q: shape %v, %d bytes of %s (%v)", name, tt.Shape, len(tt.Data), tt.DType, err)
		}
	}
}

// oneLine fails when an error spans lines.
func oneLine(t *testing.T, err error) {
	if strings.ContainsAny(err.Error(), "\n\r") {
		t.Fatalf("a multi-line error: %q", err)
	}
}

// FuzzParse: a torch.save archive of any bytes loads or fails with a
// one-line error; it never panics, and what loads is consistent.
func FuzzParse(f *testing.F) {
	f.Add(torchArchive(f, stateDictPickle(), stateDictStorages()))
	f.Add(torchArchive(f, protocol4Pickle(), map[string][]byte{"0": floattest.Bytes([]float32{1, 2, 3, 4})}))
	f.Add(torchArchive(f, viewDict("FloatStorage", 4, 0, []int{5}, []int{1 << 62}), map[string][]byte{"0": floattest.Bytes([]float32{1, 2, 3, 4})}))
	f.Add([]byte("\x80\x02\x8a\x0alegacy"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sd, err := parse(data, fuzzMaxBytes)
		if err != nil {
			oneLine(t, err)
			return
		}
		checkTensors(t, sd)
	})
}

// FuzzPickle: any data.pkl, beside storages "0" (16 floats) and "1" (8
// halves), either fails checkPickle or the unpickler and the state dict
// run on it without a panic; checkPickle is what keeps gopickle from
// panicking or allocating more than the input holds.
func FuzzPickle(f *testing.F) {
	storages := map[string][]byte{"0": make([]byte, 64), "1": make([]byte, 16)}
	archive := torchArchive(f, nil, storages)
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		f.Fatal(err)
	}
	entries := map[string]*zip.File{}
	for _, e := range zr.File {
		entries[e.Name] = e
	}
	for _, seed := range [][]byte{
		stateDictPickle(), protocol4Pickle(), oneTensorDict(0),
		viewDict("FloatStorage", 16, 0, []int{4, 4}, []int{1, 4}),
		viewDict("HalfStorage", 8, 2, []int{3}, []int{0}),
		[]byte("\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00}\x94N\x94."),
		[]byte("\x80\x03ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00aC\x01bq\x00h\x00u."),
		[]byte("\x80\x02(I1\nL12L\nF1.5\nS'x'\nVy\n\x8a\x01\x01t0}(K\x01K\x02d."),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, pkl []byte) {
		ld := newLoader(entries, "archive/", fuzzMaxBytes)
		obj, err := ld.unpickle(pkl)
		if err != nil {
			oneLine(t, err)
			return
		}
		sd, err := ld.stateDict(obj)
		if err != nil {
			oneLine(t, err)
			return
		}
		checkTensors(t, sd)
	})
}
