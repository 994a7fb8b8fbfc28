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

//go:embed sdpa.ptx
var sdpaPTX string

//go:embed sdpa.cu
var sdpaSource string

//go:embed sdpa_block.h
var sdpaBody string

// Kernel is one CUDA kernel: its PTX module and entry point.
type Kernel struct {
	// Name is how gomase calls it; Entry is the PTX entry point.
	Name, Entry string
	// PTX is the module, as gen_ptx.sh wrote it.
	PTX string
	// DynamicShared is the most dynamic shared memory a launch asks for,
	// in bytes (Load raises the function's limit when it is over 48 KB).
	DynamicShared int
	// sources are the CUDA files the PTX was generated from, concatenated.
	sources string
}

// MXInt8 is the MXINT8 dequantisation kernel:
// gomase_mxint8_dequantize(int8 *m, uint8 *e, bf16 *out, int64 n,
// int32 group_size), bit-exact with mxint8.DequantizeReference.
var MXInt8 = Kernel{Name: "mxint8_dequantize", Entry: "gomase_mxint8_dequantize", PTX: mxint8PTX, sources: mxint8Source + mxint8Body}

// SDPAFloat32 and SDPAFloat16 are the flash-attention kernel
// gomase_sdpa_f32/f16(gomase_sdpa_args) of sdpa.cu, one module: see
// SDPAConfig for what they compute and accept.
var (
	SDPAFloat32 = Kernel{Name: "sdpa_f32", Entry: "gomase_sdpa_f32", PTX: sdpaPTX, DynamicShared: sdpaSharedBytes(sdpaMaxHeadDim), sources: sdpaSource + sdpaBody}
	SDPAFloat16 = Kernel{Name: "sdpa_f16", Entry: "gomase_sdpa_f16", PTX: sdpaPTX, DynamicShared: sdpaSharedBytes(sdpaMaxHeadDim), sources: sdpaSource + sdpaBody}
)

// sdpaSharedBytes is gomase_sdpa_smem_floats(d)·4 (sdpa_block.h): q and K
// (64 rows each of head_dim rounded up to 4, plus 4), V (64 rows of 64 or
// 128) and P (64 rows of 68).
func sdpaSharedBytes(d int) int {
	qstride, vstride := (d+3)/4*4+4, 64
	if d > 64 {
		vstride = 128
	}
	return 4 * (2*64*qstride + 64*vstride + 64*68)
}

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
