package limits

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// A File bounds the size of one kind of file a loader reads.
type File struct {
	// What names the kind in errors ("a JSON config").
	What string
	// Max is the largest size accepted, in bytes.
	Max int64
}

// The largest files the loaders read. Each file is checked to be a regular
// file (a symlink to one is fine; a device, FIFO, socket or directory is
// refused) within its limit before a byte of it is read, and it is read
// whole only when it also fits in the memory available.
var (
	// JSONConfig: config.json, tokenizer_config.json and the shard indexes
	// (*.index.json); a BERT config.json is about 1 KiB.
	JSONConfig = File{"a JSON config", 4 << 20}
	// GraphJSON: the .json of a MaseGraph export (checkpoint.Import), one
	// line per module and node with its metadata.
	GraphJSON = File{"a MaseGraph's .json", 256 << 20}
	// Tokenizer: vocab.txt and tokenizer.json (bert-base-uncased's: 227 KiB
	// and 455 KiB; multilingual tokenizer.json files reach 17 MiB).
	Tokenizer = File{"a tokenizer file", 64 << 20}
	// Weights: one model.safetensors or pytorch_model.bin (or shard), read
	// whole.
	Weights = File{"a weight file", MaxModelBytes}
	// Small: a hub ref (a commit hash) or a saved token.
	Small = File{"a ref or token file", 64 << 10}
)

// Open opens the file at path for reading when it is a regular file of at
// most limit.Max bytes (following symlinks), and returns it with its size.
func Open(path string, limit File) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if err := checkInfo(path, st, limit); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	// The file opened must be the file checked (not swapped in between).
	st2, err := f.Stat()
	if err == nil && !os.SameFile(st, st2) {
		err = fmt.Errorf("%s changed while it was opened", path)
	}
	if err == nil {
		err = checkInfo(path, st2, limit)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st2.Size(), nil
}

// ReadFile reads the whole file at path when it is a regular file of at
// most limit.Max bytes (following symlinks) and fits in the memory available.
// A file that grows while it is read is an error, not a longer read.
func ReadFile(path string, limit File) ([]byte, error) {
	f, size, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if avail, ok := AvailableMemory(); ok && size > avail.Bytes {
		return nil, fmt.Errorf("%s is %s, more than the %s of memory available (%s)", path, Bytes(size), Bytes(avail.Bytes), avail.Source)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var one [1]byte
	if n, _ := f.Read(one[:]); n > 0 {
		return nil, fmt.Errorf("%s grew while it was read (it was %d bytes)", path, size)
	}
	return buf, nil
}

// checkInfo refuses anything but a regular file of at most limit.Max bytes.
func checkInfo(path string, st fs.FileInfo, limit File) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, not a regular file (allowed: a regular file or a symlink to one)", path, fileKind(st.Mode()))
	}
	if st.Size() > limit.Max {
		return fmt.Errorf("%s is %s, more than the %s allowed for %s", path, Bytes(st.Size()), Bytes(limit.Max), limit.What)
	}
	return nil
}

// fileKind names a non-regular file mode.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a plain file"
}
