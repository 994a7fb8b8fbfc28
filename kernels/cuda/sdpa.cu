// sdpa.cu: fused scaled-dot-product attention (flash-attention style) on an
// NVIDIA GPU, for float32 and float16 tensors with an optional additive
// float32 mask. Like mxint8.cu, written for clang's CUDA mode without the
// CUDA toolkit's headers; the body is sdpa_block.h (tiling described there).
//
// Launch: grid (ceil(seq_q / 64), batch·heads), 256 threads a block,
// gomase_sdpa_smem_floats(head_dim)·4 bytes of dynamic shared memory (over
// 48 KB from head_dim 33 up: raise the function's limit with cuFuncSetAttribute).
#include "sdpa_block.h"

extern __attribute__((shared)) __attribute__((aligned(16))) float gomase_sdpa_smem[];

static __attribute__((device)) __attribute__((always_inline)) inline void gomase_sdpa_run(const gomase_sdpa_args *a,
                                                                                          int half) {
	gomase_sdpa_state st;
	gomase_sdpa_block(a, half, __nvvm_read_ptx_sreg_ctaid_x(), __nvvm_read_ptx_sreg_ctaid_y(), gomase_sdpa_smem, &st,
	                  __nvvm_read_ptx_sreg_tid_x());
}

extern "C" __attribute__((global)) __attribute__((launch_bounds(GOMASE_SDPA_THREADS))) void
gomase_sdpa_f32(gomase_sdpa_args a) {
	gomase_sdpa_run(&a, 0);
}

extern "C" __attribute__((global)) __attribute__((launch_bounds(GOMASE_SDPA_THREADS))) void
gomase_sdpa_f16(gomase_sdpa_args a) {
	gomase_sdpa_run(&a, 1);
}
