package data

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/limits"
)

// pretokenizedMagic starts a file WriteFile writes; the format is the
// magic, then the number of examples (uint32), then per example its
// label (int32), its number of ids (uint32) and the ids (int32), all
// little-endian.
const pretokenizedMagic = "gomase.pretokenized.v1\n"

// PretokenizedFile bounds the size of a file ReadPretokenized reads (the
// whole IMDb, 50,000 reviews of about 300 tokens, is about 60 MiB).
var PretokenizedFile = limits.File{What: "a pretokenized dataset", Max: 1 << 30}

// WriteFile saves the token ids and labels to path, atomically, so that
// another program (a later notebook cell) reads them back with
// ReadPretokenized instead of tokenising the examples again.
func (p *Pretokenized) WriteFile(path string) error {
	var b bytes.Buffer
	b.WriteString(pretokenizedMagic)
	put := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) } // a bytes.Buffer write cannot fail
	put(uint32(len(p.ids)))
	for i, ids := range p.ids {
		put(p.labels[i])
		put(uint32(len(ids)))
		put(ids)
	}
	return atomicfile.Write(atomicfile.File{Path: path, Data: b.Bytes()})
}

// ReadPretokenized reads a file WriteFile wrote. A file that is not a
// regular file, is larger than PretokenizedFile allows, or does not hold
// exactly what its counts say is an error naming the file.
func ReadPretokenized(path string) (*Pretokenized, error) {
	buf, err := limits.ReadFile(path, PretokenizedFile)
	if err != nil {
		return nil, err
	}
	bad := func(what string) error {
		return fmt.Errorf("%s is not a pretokenized dataset gomase wrote: %s", path, what)
	}
	rest, ok := bytes.CutPrefix(buf, []byte(pretokenizedMagic))
	if !ok {
		return nil, bad("it does not start with " + fmt.Sprintf("%q", pretokenizedMagic))
	}
	next := func() (uint32, bool) {
		if len(rest) < 4 {
			return 0, false
		}
		v := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		return v, true
	}
	n, ok := next()
	// Every example takes at least 8 bytes (its label and its count).
	if !ok || uint64(n)*8 > uint64(len(rest)) {
		return nil, bad("the number of examples does not fit the file")
	}
	p := &Pretokenized{ids: make([][]int32, n), labels: make([]int32, n)}
	for i := range p.ids {
		label, _ := next()
		count, ok := next()
		if !ok || uint64(count)*4 > uint64(len(rest)) {
			return nil, bad(fmt.Sprintf("example %d is cut short", i))
		}
		if int32(label) < 0 {
			return nil, bad(fmt.Sprintf("example %d has label %d", i, int32(label)))
		}
		p.labels[i] = int32(label)
		ids := make([]int32, count)
		for j := range ids {
			v, _ := next()
			ids[j] = int32(v)
		}
		p.ids[i] = ids
	}
	if len(rest) != 0 {
		return nil, bad(fmt.Sprintf("%d bytes follow the last example", len(rest)))
	}
	return p, nil
}
