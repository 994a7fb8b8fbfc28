package mxint8

// EveryEncoding packs every canonical (mantissa, exponent) pair for group
// size groupSize: each mantissa −127…127 (and a zero filling the group)
// with each exponent 1…MaxExponent, then one all-zero group (exponent 0).
// The dequantisers are checked against each other on it.
func EveryEncoding(groupSize int) (*Packed, error) {
	if err := CheckGroupSize(groupSize); err != nil {
		return nil, err
	}
	var m []int8
	var e []uint8
	reps := max(1, groupSize/256)
	for exp := 1; exp <= MaxExponent; exp++ {
		for range reps {
			for v := -127; v <= 127; v++ {
				m = append(m, int8(v))
			}
			m = append(m, 0)
		}
		for range 256 * reps / groupSize {
			e = append(e, uint8(exp))
		}
	}
	m = append(m, make([]int8, groupSize)...)
	e = append(e, 0)
	return NewPacked(m, e, groupSize)
}
