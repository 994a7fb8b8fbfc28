// Package cuda holds gomase's CUDA kernels for NVIDIA GPUs: their CUDA
// sources, the PTX generated from them (embedded in the binary, with the
// hash of the sources it came from), and the CUDA driver opened at run
// time from the driver's own library (no CUDA toolkit needed to run).
//
// The kernels' bodies are plain C shared with a host build (cgo), so
// their arithmetic and indexing are tested on any machine against
// kernels/mxint8's reference; Driver runs them on a GPU.
package cuda

//go:generate sh gen_ptx.sh

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

//go:embed mxint8.ptx
var mxint8PTX string

//go:embed mxint8.cu
var mxint8Source string

//go:embed mxint8_elem.h
var mxint8Body string

// Kernel is one CUDA kernel: its PTX module and entry point.
type Kernel struct {
	// Name is how gomase calls it; Entry is the PTX entry point.
	Name, Entry string
	// PTX is the module, as gen_ptx.sh wrote it.
	PTX string
	// sources are the CUDA files the PTX was generated from, concatenated.
	sources string
}

// MXInt8 is the MXINT8 dequantisation kernel:
// gomase_mxint8_dequantize(int8 *m, uint8 *e, bf16 *out, int64 n,
// int32 group_size), bit-exact with mxint8.DequantizeReference.
var MXInt8 = Kernel{Name: "mxint8_dequantize", Entry: "gomase_mxint8_dequantize", PTX: mxint8PTX, sources: mxint8Source + mxint8Body}

var recordedHash = regexp.MustCompile(`^// source sha256: ([0-9a-f]{64})\b`)

// Check reports whether the PTX was generated from the sources as they
// are (the hash on its first line) and declares the entry point.
func (k Kernel) Check() error {
	m := recordedHash.FindStringSubmatch(k.PTX)
	if m == nil {
		return fmt.Errorf("cuda: %s: the PTX does not start with the sha256 of its sources; regenerate it with make ptx", k.Name)
	}
	sum := sha256.Sum256([]byte(k.sources))
	if got := hex.EncodeToString(sum[:]); got != m[1] {
		return fmt.Errorf("cuda: %s: the PTX was generated from other sources (sha256 %s, the sources now %s); regenerate it with make ptx", k.Name, m[1], got)
	}
	if !strings.Contains(k.PTX, ".entry "+k.Entry+"(") {
		return fmt.Errorf("cuda: %s: the PTX has no entry %s", k.Name, k.Entry)
	}
	return nil
}
