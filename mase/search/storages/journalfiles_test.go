package storages

// Files the journal tests of both test packages read.

import (
	"encoding/binary"
	"math"
)

// JournalHeaderLine is the first line of a journal gomase creates. It is
// written out here, not taken from the package, so that a change of the
// on-disk format shows up as a failing test.
const JournalHeaderLine = `{"format":"gomase-search-journal","v":1}` + "\n"

// checkpointLike returns the bytes of a small safetensors checkpoint: an
// 8-byte header length, a JSON header, then float32 data holding many
// newline bytes and no final newline.
func checkpointLike() []byte {
	header := `{"__metadata__":{"format":"pt"},"fc.weight":{"dtype":"F32","shape":[1024],"data_offsets":[0,4096]}}`
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	for i := range 1024 {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(i)*0.5+0.0039)|0x0a0a)
	}
	return b
}

// ForeignFiles are files that are not journals, each with a word its
// refusal must give.
var ForeignFiles = []struct {
	Name, Content, Reason string
}{
	{"checkpoint", string(checkpointLike()), "binary"},
	{"JSON config", `{"hidden_size": 128, "num_layers": 2}` + "\n", "JSON"},
	{"JSON without a final newline", `{"a": 1}`, "JSON"},
	{"JSON lines of another kind", "[1, 2]\n[3, 4]\n", "JSON"},
	{"Optuna journal", `{"op_code": 0, "worker_id": "w-1", "study_name": "s", "directions": [2]}` + "\n", "Optuna journal"},
	{"text without a final newline", "first line\nsecond line\nlast line", "text"},
	{"text", "notes\n", "text"},
	{"a record that never starts a journal", `{"op":"set_param","study":"s","trial":0}` + "\n", "JSON"},
}
