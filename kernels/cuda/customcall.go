package cuda

import (
	"fmt"

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
