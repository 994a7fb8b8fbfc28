// sdpa_block.h: the body of the flash-attention kernel, shared by the CUDA
// kernel (sdpa.cu) and its host build (host_cgo.go), so the host tests
// check the arithmetic, the indexing and the phases the GPU runs.
//
// out = softmax(q·kᵀ·scale + mask)·v, layout [batch, heads, seq, head_dim]
// row-major, head_dim ≤ 128, float32 or float16 (float32 arithmetic).
//
// Tiling: a block of 256 threads (8 warps) owns 64 query rows of one
// (batch, head); warp w owns 8 of them. q·scale is staged in shared memory
// once; then for each tile of 32 keys the block stages K and V (float32),
// lane l of each warp scores key l against the warp's 8 rows, the warp
// takes each row's maximum (shuffles), and every lane rescales its
// accumulators by exp(m_old - m_new) and adds p·V for its columns
// (d = lane, lane + 32, …). Each lane keeps 8 rows × 4 columns of
// accumulators, the running maximum and its part of the running sum in
// registers; the sums are added across the warp at the end. No score
// matrix leaves the block.
//
// A row whose every score is -Inf (keys all masked by -Inf) gets zeros, as
// kernels/sdpa's Reference. exp is computed by gomase_sdpa_exp2 below (no
// libm on the device), within a few float32 ulp.
//
// The block's code is written once (gomase_sdpa_block) over phases that
// every thread runs between barriers: on the GPU GOMASE_FOR_THREADS runs
// the calling thread only and the barriers are real; on the host it loops
// over the 256 threads and the phases are the barriers.
#ifndef GOMASE_SDPA_BLOCK_H
#define GOMASE_SDPA_BLOCK_H

#ifdef __CUDA__
#define GOMASE_SDPA_FN __attribute__((device)) __attribute__((always_inline)) static inline
#else
#define GOMASE_SDPA_FN static inline
#endif
#ifdef __clang__
#define GOMASE_UNROLL _Pragma("unroll")
#else
#define GOMASE_UNROLL
#endif

#define GOMASE_SDPA_ROWS 64   // query rows per block
#define GOMASE_SDPA_KEYS 32   // keys per tile (one per lane)
#define GOMASE_SDPA_WARPS 8   // warps per block
#define GOMASE_SDPA_WROWS 8   // query rows per warp
#define GOMASE_SDPA_THREADS 256
#define GOMASE_SDPA_MAX_D 128 // head_dim limit
#define GOMASE_SDPA_DCOLS 4   // columns per lane: GOMASE_SDPA_MAX_D / 32

// gomase_sdpa_args is the kernel's only parameter (passed by value; the
// same layout on the host and the device: pointers, then 64-bit, then
// 32-bit fields). mask is NULL or a float32 tensor read at
// b·mask_stride[0] + h·mask_stride[1] + i·mask_stride[2] + j·mask_stride[3]
// (stride 0 on a broadcast axis).
typedef struct {
	const void *q, *k, *v;
	const float *mask;
	void *out;
	long long mask_stride[4];
	int batch, heads, seq_q, seq_k, head_dim;
	float scale;
} gomase_sdpa_args;

// The shared memory of a block, in floats: q (64 × D), K (32 × (D+1), the
// +1 keeps lanes reading different keys on different banks), V (32 × D),
// P (8 warps × 32 keys × 8 rows).
GOMASE_SDPA_FN long long gomase_sdpa_smem_floats(int d) {
	return (long long)GOMASE_SDPA_ROWS * d + GOMASE_SDPA_KEYS * (d + 1) + GOMASE_SDPA_KEYS * d +
	       GOMASE_SDPA_WARPS * GOMASE_SDPA_KEYS * GOMASE_SDPA_WROWS;
}

// One thread's registers.
typedef struct {
	float acc[GOMASE_SDPA_WROWS][GOMASE_SDPA_DCOLS]; // unnormalised output columns lane + 32c
	float m[GOMASE_SDPA_WROWS];                      // running maximum of the row's scores (warp-uniform)
	float l[GOMASE_SDPA_WROWS];                      // this lane's part of the running sum
	float s[GOMASE_SDPA_WROWS];                      // the lane's scores of the current tile
	float mx[GOMASE_SDPA_WROWS];                     // the tile's new maximum, after the warp reduction
} gomase_sdpa_state;

GOMASE_SDPA_FN float gomase_sdpa_bits_float(unsigned int b) {
	float f;
	__builtin_memcpy(&f, &b, sizeof f);
	return f;
}

GOMASE_SDPA_FN unsigned int gomase_sdpa_float_bits(float f) {
	unsigned int b;
	__builtin_memcpy(&b, &f, sizeof b);
	return b;
}

GOMASE_SDPA_FN float gomase_sdpa_max(float a, float b) { return a > b ? a : b; }

// gomase_sdpa_half_float widens IEEE binary16 bits to float32 (exact).
GOMASE_SDPA_FN float gomase_sdpa_half_float(unsigned short h) {
	unsigned int sign = (unsigned int)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	if (e == 0) { // zero or subnormal: m·2⁻²⁴
		float f = (float)m * 5.9604644775390625e-8f;
		return sign ? -f : f;
	}
	if (e == 31) return gomase_sdpa_bits_float(sign | 0x7f800000u | m << 13);
	return gomase_sdpa_bits_float(sign | (e + 112) << 23 | m << 13);
}

// gomase_sdpa_float_half rounds float32 to binary16 bits, to nearest even.
GOMASE_SDPA_FN unsigned short gomase_sdpa_float_half(float f) {
	unsigned int x = gomase_sdpa_float_bits(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u) return (unsigned short)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
	if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00); // ≥ 65520 rounds to infinity
	if (ax < 0x38800000u) {                                         // below 2⁻¹⁴: a multiple of 2⁻²⁴
		float scaled = gomase_sdpa_bits_float(ax) * 16777216.0f;   // exact
		return (unsigned short)(sign | (unsigned int)__builtin_rintf(scaled));
	}
	unsigned int h = ((ax >> 23) - 112) << 10 | (ax & 0x7fffff) >> 13, rest = ax & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++; // a carry into the exponent is right
	return (unsigned short)(sign | h);
}

// gomase_sdpa_exp2 is 2^x for x ≤ 0 (the only case here): 0 below -126
// (and for -Inf); otherwise 2^n · 2^f with n = rint(x), |f| ≤ ½, and 2^f by
// its degree-7 Taylor polynomial in f·ln2 (truncation below 1e-8).
GOMASE_SDPA_FN float gomase_sdpa_exp2(float x) {
	if (!(x >= -126.0f)) return 0.0f;
	float n = __builtin_rintf(x);
	float y = (x - n) * 0.693147180559945309f;
	float p = 1.0f / 5040;
	p = p * y + 1.0f / 720;
	p = p * y + 1.0f / 120;
	p = p * y + 1.0f / 24;
	p = p * y + 1.0f / 6;
	p = p * y + 0.5f;
	p = p * y + 1.0f;
	p = p * y + 1.0f;
	return p * gomase_sdpa_bits_float((unsigned int)((int)n + 127) << 23);
}

GOMASE_SDPA_FN float gomase_sdpa_load(const void *p, long long i, int half) {
	return half ? gomase_sdpa_half_float(((const unsigned short *)p)[i]) : ((const float *)p)[i];
}

// gomase_sdpa_load_q stages rows q0… of q·scale (zeros past seq_q).
GOMASE_SDPA_FN void gomase_sdpa_load_q(const gomase_sdpa_args *a, int half, long long bh, int q0, float *qs, int t) {
	int d = a->head_dim;
	long long base = (bh * a->seq_q + q0) * d;
	for (int x = t; x < GOMASE_SDPA_ROWS * d; x += GOMASE_SDPA_THREADS) {
		qs[x] = q0 + x / d < a->seq_q ? gomase_sdpa_load(a->q, base + x, half) * a->scale : 0.0f;
	}
}

GOMASE_SDPA_FN void gomase_sdpa_init(gomase_sdpa_state *st) {
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_WROWS; r++) {
		st->m[r] = -__builtin_inff();
		st->l[r] = 0.0f;
		GOMASE_UNROLL
		for (int c = 0; c < GOMASE_SDPA_DCOLS; c++) st->acc[r][c] = 0.0f;
	}
}

// gomase_sdpa_load_kv stages keys k0… of K and V (zeros past seq_k).
GOMASE_SDPA_FN void gomase_sdpa_load_kv(const gomase_sdpa_args *a, int half, long long bh, int k0, float *ks, float *vs,
                                        int t) {
	int d = a->head_dim;
	long long base = (bh * a->seq_k + k0) * d;
	for (int x = t; x < GOMASE_SDPA_KEYS * d; x += GOMASE_SDPA_THREADS) {
		int j = x / d, c = x - j * d;
		int in = k0 + j < a->seq_k;
		ks[j * (d + 1) + c] = in ? gomase_sdpa_load(a->k, base + x, half) : 0.0f;
		vs[x] = in ? gomase_sdpa_load(a->v, base + x, half) : 0.0f;
	}
}

// gomase_sdpa_scores: lane scores key k0 + lane against the warp's rows
// (-Inf past seq_k) and proposes the new maxima.
GOMASE_SDPA_FN void gomase_sdpa_scores(const gomase_sdpa_args *a, long long bh, int q0, int k0, const float *qs,
                                       const float *ks, gomase_sdpa_state *st, int t) {
	int d = a->head_dim, w = t / 32, lane = t % 32, key = k0 + lane;
	const float *kr = ks + lane * (d + 1), *qr = qs + w * GOMASE_SDPA_WROWS * d;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_WROWS; r++) st->s[r] = 0.0f;
	for (int c = 0; c < d; c++) {
		float kc = kr[c];
		GOMASE_UNROLL
		for (int r = 0; r < GOMASE_SDPA_WROWS; r++) st->s[r] += qr[r * d + c] * kc;
	}
	long long b = bh / a->heads, h = bh % a->heads;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_WROWS; r++) {
		int i = q0 + w * GOMASE_SDPA_WROWS + r;
		if (key >= a->seq_k) {
			st->s[r] = -__builtin_inff();
		} else if (a->mask) {
			long long mi = i < a->seq_q ? i : a->seq_q - 1; // rows past seq_q are computed, never stored
			st->s[r] += a->mask[b * a->mask_stride[0] + h * a->mask_stride[1] + mi * a->mask_stride[2] +
			                    key * a->mask_stride[3]];
		}
		st->mx[r] = gomase_sdpa_max(st->m[r], st->s[r]);
	}
}

// gomase_sdpa_softmax: with the warp's new maxima in mx, rescales the
// accumulators and the sum by exp(m_old - m_new), adds exp(s - m_new) to
// the lane's sum and leaves it in P for the warp.
GOMASE_SDPA_FN void gomase_sdpa_softmax(gomase_sdpa_state *st, float *ps, int t) {
	const float log2e = 1.44269504088896341f;
	int w = t / 32, lane = t % 32;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_WROWS; r++) {
		float mn = st->mx[r];
		float base = mn == -__builtin_inff() ? 0.0f : mn; // all -Inf so far: every p is 0
		float corr = gomase_sdpa_exp2((st->m[r] - base) * log2e);
		float p = gomase_sdpa_exp2((st->s[r] - base) * log2e);
		st->m[r] = mn;
		st->l[r] = st->l[r] * corr + p;
		GOMASE_UNROLL
		for (int c = 0; c < GOMASE_SDPA_DCOLS; c++) st->acc[r][c] *= corr;
		ps[(w * GOMASE_SDPA_KEYS + lane) * GOMASE_SDPA_WROWS + r] = p;
	}
}

// gomase_sdpa_pv adds P·V to the lane's columns.
GOMASE_SDPA_FN void gomase_sdpa_pv(const gomase_sdpa_args *a, int k0, const float *vs, const float *ps,
                                   gomase_sdpa_state *st, int t) {
	int d = a->head_dim, w = t / 32, lane = t % 32;
	int keys = a->seq_k - k0 < GOMASE_SDPA_KEYS ? a->seq_k - k0 : GOMASE_SDPA_KEYS;
	for (int j = 0; j < keys; j++) {
		const float *p = ps + (w * GOMASE_SDPA_KEYS + j) * GOMASE_SDPA_WROWS;
		GOMASE_UNROLL
		for (int c = 0; c < GOMASE_SDPA_DCOLS; c++) {
			int col = lane + 32 * c;
			float vc = col < d ? vs[j * d + col] : 0.0f;
			GOMASE_UNROLL
			for (int r = 0; r < GOMASE_SDPA_WROWS; r++) st->acc[r][c] += p[r] * vc;
		}
	}
}

// gomase_sdpa_store writes the lane's columns of its warp's rows, divided
// by the row's sum (in l after the warp reduction); zeros when it is 0.
GOMASE_SDPA_FN void gomase_sdpa_store(const gomase_sdpa_args *a, int half, long long bh, int q0,
                                      const gomase_sdpa_state *st, int t) {
	int d = a->head_dim, w = t / 32, lane = t % 32;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_WROWS; r++) {
		int i = q0 + w * GOMASE_SDPA_WROWS + r;
		if (i >= a->seq_q) continue;
		float inv = st->l[r] > 0.0f ? 1.0f / st->l[r] : 0.0f;
		long long base = (bh * a->seq_q + i) * d;
		GOMASE_UNROLL
		for (int c = 0; c < GOMASE_SDPA_DCOLS; c++) {
			int col = lane + 32 * c;
			if (col >= d) continue;
			float y = st->acc[r][c] * inv;
			if (half) {
				((unsigned short *)a->out)[base + col] = gomase_sdpa_float_half(y);
			} else {
				((float *)a->out)[base + col] = y;
			}
		}
	}
}

#ifdef __CUDA__
// On the GPU each thread runs its own phase; st is its one state.
#define GOMASE_FOR_THREADS(t) for (int t = tid, once_ = 1; once_; once_ = 0)
#define GOMASE_STATE(t) st
#define GOMASE_SYNC() __syncthreads()
#define GOMASE_SYNCWARP() __nvvm_bar_warp_sync(0xffffffffu)

GOMASE_SDPA_FN float gomase_sdpa_warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = gomase_sdpa_max(v, __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, o, 0x1f));
	return v;
}

GOMASE_SDPA_FN float gomase_sdpa_warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, o, 0x1f);
	return v;
}

// The warp reductions of the rows' maxima (mx) and, at the end, sums (l).
GOMASE_SDPA_FN void gomase_sdpa_reduce_max(gomase_sdpa_state *st, int tid) {
	(void)tid;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_WROWS; r++) st->mx[r] = gomase_sdpa_warp_max(st->mx[r]);
}

GOMASE_SDPA_FN void gomase_sdpa_reduce_sum(gomase_sdpa_state *st, int tid) {
	(void)tid;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_WROWS; r++) st->l[r] = gomase_sdpa_warp_sum(st->l[r]);
}
#else
// On the host every phase loops over the block's threads; st holds all
// their states.
#define GOMASE_FOR_THREADS(t) for (int t = 0; t < GOMASE_SDPA_THREADS; t++)
#define GOMASE_STATE(t) (&st[t])
#define GOMASE_SYNC() (void)0
#define GOMASE_SYNCWARP() (void)0

// The host's warp reductions: the butterfly of the shuffles, the same
// order of operations as on the GPU.
static inline void gomase_sdpa_butterfly(gomase_sdpa_state *st, int sum) {
	for (int w = 0; w < GOMASE_SDPA_WARPS; w++) {
		gomase_sdpa_state *ws = st + 32 * w;
		for (int r = 0; r < GOMASE_SDPA_WROWS; r++) {
			float v[32], nv[32];
			for (int lane = 0; lane < 32; lane++) v[lane] = sum ? ws[lane].l[r] : ws[lane].mx[r];
			for (int o = 16; o > 0; o >>= 1) {
				for (int lane = 0; lane < 32; lane++)
					nv[lane] = sum ? v[lane] + v[lane ^ o] : gomase_sdpa_max(v[lane], v[lane ^ o]);
				for (int lane = 0; lane < 32; lane++) v[lane] = nv[lane];
			}
			for (int lane = 0; lane < 32; lane++) *(sum ? &ws[lane].l[r] : &ws[lane].mx[r]) = v[lane];
		}
	}
}

static inline void gomase_sdpa_reduce_max(gomase_sdpa_state *st, int tid) {
	(void)tid;
	gomase_sdpa_butterfly(st, 0);
}

static inline void gomase_sdpa_reduce_sum(gomase_sdpa_state *st, int tid) {
	(void)tid;
	gomase_sdpa_butterfly(st, 1);
}
#endif

// gomase_sdpa_block is block (qblock, bh) of the grid: query rows
// qblock·64… of batch·heads index bh. smem has gomase_sdpa_smem_floats(D)
// floats; st is the thread's state on the GPU, all 256 on the host.
GOMASE_SDPA_FN void gomase_sdpa_block(const gomase_sdpa_args *a, int half, int qblock, long long bh, float *smem,
                                      gomase_sdpa_state *st, int tid) {
	(void)tid;
	int d = a->head_dim, q0 = qblock * GOMASE_SDPA_ROWS;
	float *qs = smem, *ks = qs + GOMASE_SDPA_ROWS * d, *vs = ks + GOMASE_SDPA_KEYS * (d + 1),
	      *ps = vs + GOMASE_SDPA_KEYS * d;
	GOMASE_FOR_THREADS(t) {
		gomase_sdpa_load_q(a, half, bh, q0, qs, t);
		gomase_sdpa_init(GOMASE_STATE(t));
	}
	for (int k0 = 0; k0 < a->seq_k; k0 += GOMASE_SDPA_KEYS) {
		GOMASE_FOR_THREADS(t) gomase_sdpa_load_kv(a, half, bh, k0, ks, vs, t);
		GOMASE_SYNC(); // K, V (and q, the first time) staged
		GOMASE_FOR_THREADS(t) gomase_sdpa_scores(a, bh, q0, k0, qs, ks, GOMASE_STATE(t), t);
		gomase_sdpa_reduce_max(st, tid);
		GOMASE_FOR_THREADS(t) gomase_sdpa_softmax(GOMASE_STATE(t), ps, t);
		GOMASE_SYNCWARP(); // the warp's P written
		GOMASE_FOR_THREADS(t) gomase_sdpa_pv(a, k0, vs, ps, GOMASE_STATE(t), t);
		GOMASE_SYNC(); // K, V and P read before the next tile overwrites them
	}
	gomase_sdpa_reduce_sum(st, tid);
	GOMASE_FOR_THREADS(t) gomase_sdpa_store(a, half, bh, q0, GOMASE_STATE(t), t);
}

#endif
