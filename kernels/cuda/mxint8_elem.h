// mxint8_elem.h: the body of the MXINT8 dequantisation kernel, shared by
// the CUDA kernel (mxint8.cu) and its host build (host_cgo.go), so the
// host tests check the arithmetic and the indexing the GPU runs.
//
// y = upper 16 bits of float32(m) * 2^(e - 133): exact (m has at most 7
// significant bits), so truncating to bfloat16 is bit-exact with
// kernels/mxint8's reference. The scale is built from its bits: (e - 6)
// << 23 for a normal float32 (e >= 7), 1 << (e + 16) for a subnormal one;
// multiplications keep subnormals (no flush to zero).
#ifndef GOMASE_MXINT8_ELEM_H
#define GOMASE_MXINT8_ELEM_H

#ifdef __CUDA__
#define GOMASE_ELEM __attribute__((device)) static inline
#else
#define GOMASE_ELEM static inline
#endif

GOMASE_ELEM float gomase_mxint8_scale(unsigned char e) {
	unsigned int bits = e >= 7 ? ((unsigned int)e - 6u) << 23 : 1u << (e + 16u);
	float f;
	__builtin_memcpy(&f, &bits, sizeof f);
	return f;
}

GOMASE_ELEM unsigned short gomase_mxint8_bf16(signed char m, float scale) {
	float y = (float)m * scale;
	unsigned int bits;
	__builtin_memcpy(&bits, &y, sizeof bits);
	return (unsigned short)(bits >> 16);
}

// gomase_mxint8_dequantize_range is what the thread numbered thread of
// stride threads does: 4 consecutive values at a time (one 32-bit load,
// one 64-bit store; 4 values never straddle a group, every group size
// being a multiple of 8) in a grid-stride loop, then the last n % 4 values
// one at a time. m and out must be 8-byte aligned.
GOMASE_ELEM void gomase_mxint8_dequantize_range(const signed char *m, const unsigned char *e,
                                                unsigned short *out, long long n, int group_size,
                                                long long thread, long long stride) {
	long long full = n / 4;
	for (long long q = thread; q < full; q += stride) {
		long long i = 4 * q;
		unsigned int word = ((const unsigned int *)m)[q];
		float scale = gomase_mxint8_scale(e[i / group_size]);
		unsigned long long b0 = gomase_mxint8_bf16((signed char)(word & 0xff), scale);
		unsigned long long b1 = gomase_mxint8_bf16((signed char)((word >> 8) & 0xff), scale);
		unsigned long long b2 = gomase_mxint8_bf16((signed char)((word >> 16) & 0xff), scale);
		unsigned long long b3 = gomase_mxint8_bf16((signed char)(word >> 24), scale);
		((unsigned long long *)out)[q] = b0 | b1 << 16 | b2 << 32 | b3 << 48;
	}
	for (long long i = 4 * full + thread; i < n; i += stride) {
		out[i] = gomase_mxint8_bf16(m[i], gomase_mxint8_scale(e[i / group_size]));
	}
}

#endif
