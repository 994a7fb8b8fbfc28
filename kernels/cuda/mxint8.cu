// mxint8.cu: MXINT8 dequantisation to bfloat16 on an NVIDIA GPU.
//
// Written for clang's CUDA mode without the CUDA toolkit's headers (the
// thread indices come from NVVM builtins), so the PTX can be regenerated
// with clang alone (gen_ptx.sh); nvcc compiles it too.
//
// gomase_mxint8_dequantize(m, e, out, n, group_size): m holds n int8
// mantissas, e one uint8 exponent per group of group_size (a multiple of 8;
// the last group may be partial), out receives n bfloat16 values. The work
// of each thread is gomase_mxint8_dequantize_range (mxint8_elem.h).
#include "mxint8_elem.h"

extern "C" __attribute__((global)) void gomase_mxint8_dequantize(const signed char *m, const unsigned char *e,
                                                                 unsigned short *out, long long n, int group_size) {
	long long ntid = __nvvm_read_ptx_sreg_ntid_x();
	long long thread = (long long)__nvvm_read_ptx_sreg_ctaid_x() * ntid + __nvvm_read_ptx_sreg_tid_x();
	gomase_mxint8_dequantize_range(m, e, out, n, group_size, thread, (long long)__nvvm_read_ptx_sreg_nctaid_x() * ntid);
}
