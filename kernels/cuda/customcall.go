package cuda

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
)

// Call is how an XLA graph runs one of these kernels: a StableHLO custom
// call (API version 2, status-returning) to Target, whose handler reads
// its sizes from Config (the custom call's backend_config: printable
// ASCII, since go-xla renders it as a quoted string). Operands and results
// are row-major.
type Call struct {
	Target string
	Config string
	// Operands and Results are the shapes the call takes and returns.
	Operands, Results []shapes.Shape
}

// Layouts returns row-major minor-to-major orders for shapes (the
// operand_layouts / result_layouts of the custom call).
func Layouts(ss []shapes.Shape) [][]int {
	out := make([][]int, len(ss))
	for i, s := range ss {
		order := make([]int, s.Rank())
		for j := range order {
			order[j] = s.Rank() - 1 - j
		}
		out[i] = order
	}
	return out
}

// MXInt8Target is the custom-call target of the MXINT8 kernel.
const MXInt8Target = "gomase_mxint8_dequantize"

// MXInt8Call is the custom call dequantising n MXINT8 values in groups of
// groupSize: operands int8[n] mantissas and uint8[ceil(n/groupSize)]
// exponents, result bfloat16[n].
func MXInt8Call(n, groupSize int) (Call, error) {
	if n < 1 || groupSize < 8 || groupSize > 512 || groupSize&(groupSize-1) != 0 {
		return Call{}, fmt.Errorf("cuda: MXINT8 call of %d values in groups of %d (allowed: at least one value, groups of 8, 16, …, 512)", n, groupSize)
	}
	return Call{
		Target:   MXInt8Target,
		Config:   fmt.Sprintf("n=%d group_size=%d", n, groupSize),
		Operands: []shapes.Shape{shapes.Make(dtypes.Int8, n), shapes.Make(dtypes.Uint8, (n+groupSize-1)/groupSize)},
		Results:  []shapes.Shape{shapes.Make(dtypes.BFloat16, n)},
	}, nil
}

// ParseMXInt8Config reads n and the group size back from an MXINT8 call's
// payload (what the handler does in C).
func ParseMXInt8Config(config string) (n, groupSize int, err error) {
	if _, err := fmt.Sscanf(config, "n=%d group_size=%d", &n, &groupSize); err != nil {
		return 0, 0, fmt.Errorf("cuda: MXINT8 payload %q (want \"n=N group_size=G\"): %w", config, err)
	}
	if _, err := MXInt8Call(n, groupSize); err != nil {
		return 0, 0, err
	}
	return n, groupSize, nil
}

// SDPATarget is the custom-call target of the flash-attention kernel.
const SDPATarget = "gomase_sdpa"

const sdpaMaxHeadDim = 128

// SDPAConfig is one call of the flash-attention kernel:
// out = softmax(q·kᵀ·Scale + mask)·v with q and out
// [Batch, Heads, SeqQ, HeadDim], k and v [Batch, Heads, SeqK, HeadDim],
// all row-major and of DType (float32, or float16 with float32 arithmetic).
// A row whose scores are all -Inf (every key masked by -Inf) gets zeros,
// as sdpa.Reference.
type SDPAConfig struct {
	Batch, Heads, SeqQ, SeqK, HeadDim int
	DType                             dtypes.DType
	// Scale multiplies q·kᵀ; SDPACall replaces 0 by 1/√HeadDim.
	Scale float32
	// MaskDims is nil (no mask) or the dimensions of the additive float32
	// mask, broadcast to [Batch, Heads, SeqQ, SeqK]: each is 1 or the full
	// size, e.g. [Batch, 1, 1, SeqK] (key padding) or [1, 1, SeqQ, SeqK].
	MaskDims []int
}

// shape is the shape of q (seq SeqQ) or of k and v (seq SeqK).
func (c SDPAConfig) shape(seq int) shapes.Shape {
	return shapes.Make(c.DType, c.Batch, c.Heads, seq, c.HeadDim)
}

// MaskStrides are the mask's row-major strides in elements, 0 on its
// broadcast axes (what the kernel reads it with).
func (c SDPAConfig) MaskStrides() [4]int64 {
	var st [4]int64
	if len(c.MaskDims) != 4 {
		return st
	}
	n := int64(1)
	for a := 3; a >= 0; a-- {
		if c.MaskDims[a] != 1 {
			st[a] = n
		}
		n *= int64(c.MaskDims[a])
	}
	return st
}

func (c SDPAConfig) check() error {
	if c.Batch < 1 || c.Heads < 1 || c.SeqQ < 1 || c.SeqK < 1 || c.Batch*c.Heads > 65535 || c.SeqQ > 1<<30 || c.SeqK > 1<<30 {
		return fmt.Errorf("cuda: SDPA call of batch %d, heads %d, seq_q %d, seq_k %d (allowed: every size ≥ 1, batch·heads ≤ 65535, sequences ≤ 2^30)", c.Batch, c.Heads, c.SeqQ, c.SeqK)
	}
	if c.HeadDim < 1 || c.HeadDim > sdpaMaxHeadDim {
		return fmt.Errorf("cuda: SDPA call with head_dim %d (allowed: 1 to %d)", c.HeadDim, sdpaMaxHeadDim)
	}
	if c.DType != dtypes.Float32 && c.DType != dtypes.Float16 {
		return fmt.Errorf("cuda: SDPA call in %s (allowed: float32, float16)", c.DType)
	}
	if math.IsNaN(float64(c.Scale)) || math.IsInf(float64(c.Scale), 0) || c.Scale == 0 {
		return fmt.Errorf("cuda: SDPA call with scale %v (allowed: finite and non-zero; 0 selects 1/√head_dim in SDPACall)", c.Scale)
	}
	if c.MaskDims != nil {
		full := []int{c.Batch, c.Heads, c.SeqQ, c.SeqK}
		ok := len(c.MaskDims) == 4
		for a := 0; ok && a < 4; a++ {
			ok = c.MaskDims[a] == 1 || c.MaskDims[a] == full[a]
		}
		if !ok {
			return fmt.Errorf("cuda: SDPA mask of dimensions %v (allowed: [1|%d, 1|%d, 1|%d, 1|%d], float32)", c.MaskDims, c.Batch, c.Heads, c.SeqQ, c.SeqK)
		}
	}
	return nil
}

// SDPACall is the custom call of the flash-attention kernel for c (Scale 0
// meaning 1/√HeadDim): operands q, k, v and the mask when c has one,
// result shaped as q. The payload is
// "b=B h=H sq=SQ sk=SK d=D dtype=f32|f16 scale=0xBITS mask=none|S0,S1,S2,S3"
// with the scale's float32 bits and the mask's strides.
func SDPACall(c SDPAConfig) (Call, error) {
	if c.Scale == 0 && c.HeadDim > 0 {
		c.Scale = float32(1 / math.Sqrt(float64(c.HeadDim)))
	}
	if err := c.check(); err != nil {
		return Call{}, err
	}
	dt := "f32"
	if c.DType == dtypes.Float16 {
		dt = "f16"
	}
	mask := "none"
	ops := []shapes.Shape{c.shape(c.SeqQ), c.shape(c.SeqK), c.shape(c.SeqK)}
	if c.MaskDims != nil {
		st := c.MaskStrides()
		mask = fmt.Sprintf("%d,%d,%d,%d", st[0], st[1], st[2], st[3])
		ops = append(ops, shapes.Make(dtypes.Float32, c.MaskDims...))
	}
	return Call{
		Target: SDPATarget,
		Config: fmt.Sprintf("b=%d h=%d sq=%d sk=%d d=%d dtype=%s scale=0x%08x mask=%s",
			c.Batch, c.Heads, c.SeqQ, c.SeqK, c.HeadDim, dt, math.Float32bits(c.Scale), mask),
		Operands: ops,
		Results:  []shapes.Shape{c.shape(c.SeqQ)},
	}, nil
}

// ParseSDPAConfig reads an SDPA call's payload back (what the handler does
// in C). The mask's dimensions are recovered from its strides.
func ParseSDPAConfig(payload string) (SDPAConfig, error) {
	var c SDPAConfig
	var dt, mask string
	var bits uint32
	bad := func(err error) (SDPAConfig, error) {
		return SDPAConfig{}, fmt.Errorf("cuda: SDPA payload %q (want \"b=B h=H sq=SQ sk=SK d=D dtype=f32|f16 scale=0xBITS mask=none|S0,S1,S2,S3\"): %w", payload, err)
	}
	n, err := fmt.Sscanf(payload, "b=%d h=%d sq=%d sk=%d d=%d dtype=%s scale=0x%x mask=%s",
		&c.Batch, &c.Heads, &c.SeqQ, &c.SeqK, &c.HeadDim, &dt, &bits, &mask)
	if err != nil || n != 8 {
		return bad(fmt.Errorf("read %d fields: %v", n, err))
	}
	switch dt {
	case "f32":
		c.DType = dtypes.Float32
	case "f16":
		c.DType = dtypes.Float16
	default:
		return bad(fmt.Errorf("dtype %q", dt))
	}
	c.Scale = math.Float32frombits(bits)
	if mask != "none" {
		var st [4]int64
		if n, err := fmt.Sscanf(mask, "%d,%d,%d,%d", &st[0], &st[1], &st[2], &st[3]); err != nil || n != 4 {
			return bad(fmt.Errorf("mask strides %q", mask))
		}
		full := [4]int{c.Batch, c.Heads, c.SeqQ, c.SeqK}
		c.MaskDims = make([]int, 4)
		for a := range 4 {
			c.MaskDims[a] = 1
			if st[a] != 0 {
				c.MaskDims[a] = full[a]
			}
		}
		if c.MaskStrides() != st {
			return bad(fmt.Errorf("mask strides %v are not those of a row-major mask broadcast to [%d %d %d %d]", st, c.Batch, c.Heads, c.SeqQ, c.SeqK))
		}
	}
	if err := c.check(); err != nil {
		return SDPAConfig{}, err
	}
	if want, _ := SDPACall(c); want.Config != payload {
		return bad(fmt.Errorf("not in the canonical form %q", want.Config))
	}
	return c, nil
}
