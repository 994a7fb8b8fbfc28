package mxint8

import "fmt"

// CuTeTile is how MASE's CUDA dequantiser (mase-cuda's dequantize1d_device,
// written with CUTLASS's CuTe) tiles the work for one group size. The
// kernel views the mantissas as a (group size, number of groups) matrix,
// one group per column, column-major (stride (1, group size)).
//
//   - cta_tiler = (BlkM, BlkK): local_tile(mX, cta_tiler, (blockIdx.x, _))
//     gives thread block (CTA) b rows b·BlkM … of every column, cut into
//     k-tiles of BlkK groups (BlkM = the group size, at most 256); the
//     block copies one k-tile to shared memory per step.
//   - layout_sX = (BlkM, BlkK):(1, BlkM): the layout of that tile in shared
//     memory (sX), CuTe's default column-major strides, so element (m, k)
//     sits at byte m + k·BlkM and each group's values are contiguous, as in
//     global memory.
//   - layout_tX = (ThdM, BlkK):(1, ThdM): the block's ThdM·BlkK threads;
//     local_partition gives thread t the elements (t mod ThdM + i·ThdM,
//     ⌊t/ThdM⌋) of the tile, i = 0 … BlkM/ThdM − 1.
type CuTeTile struct {
	GroupSize, BlkM, BlkK, ThdM int
}

// cuteTiles are the (BLK_M, BLK_K, THD_M) of each group size in
// mase-cuda's dequantize1d.
var cuteTiles = map[int][3]int{
	8: {8, 128, 8}, 16: {16, 64, 16}, 32: {32, 32, 32}, 64: {64, 16, 64},
	128: {128, 8, 64}, 256: {256, 4, 128}, 512: {256, 4, 128},
}

// CuTeTiling returns MASE's CUDA tiling for a group size of GroupSizes.
func CuTeTiling(groupSize int) (CuTeTile, error) {
	t, ok := cuteTiles[groupSize]
	if !ok {
		return CuTeTile{}, fmt.Errorf("mxint8: group size %d has no CUDA tiling (allowed: %s)", groupSize, intList(GroupSizes))
	}
	return CuTeTile{GroupSize: groupSize, BlkM: t[0], BlkK: t[1], ThdM: t[2]}, nil
}

// Threads is the number of threads per block (size of layout_tX).
func (t CuTeTile) Threads() int { return t.ThdM * t.BlkK }

// SmemOffset is layout_sX applied to the tile coordinate (m, k): the byte
// of shared memory that holds it.
func (t CuTeTile) SmemOffset(m, k int) int { return m + k*t.BlkM }

// ThreadElements returns the tile coordinates (m, k) that
// local_partition(sX, layout_tX, thread) gives thread, in order.
func (t CuTeTile) ThreadElements(thread int) [][2]int {
	var out [][2]int
	m0, k := thread%t.ThdM, thread/t.ThdM
	for m := m0; m < t.BlkM; m += t.ThdM {
		out = append(out, [2]int{m, k})
	}
	return out
}

// Blocks is the kernel's grid: ⌈group size / BlkM⌉ thread blocks (one up
// to a group of 256, two for 512), each walking every k-tile in turn.
func (t CuTeTile) Blocks() int { return (t.GroupSize + t.BlkM - 1) / t.BlkM }

// GlobalOffset is the mantissa (byte) index in global memory of tile
// coordinate (m, k) of block's tile at k-tile kt: element block·BlkM + m
// of group kt·BlkK + k.
func (t CuTeTile) GlobalOffset(block, kt, m, k int) int {
	return (kt*t.BlkK+k)*t.GroupSize + block*t.BlkM + m
}
