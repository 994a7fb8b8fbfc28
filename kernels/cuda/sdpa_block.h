// sdpa_block.h: the body of the flash-attention kernel, shared by the CUDA
// kernel (sdpa.cu) and its host build (host_cgo.go), so the host tests
// check the arithmetic, the indexing and the phases the GPU runs.
//
// out = softmax(q·kᵀ·scale + mask)·v, layout [batch, heads, seq, head_dim]
// row-major, head_dim ≤ 128, float32 or float16 (float32 arithmetic).
//
// Tiling: a block of 256 threads owns 64 query rows of one (batch, head)
// and walks the keys in tiles of 64. Thread t is in row group ty = t / 16
// (query rows 4·ty … 4·ty + 3) at column tx = t % 16. q·scale is staged in
// shared memory once; for each tile the block stages K and V, and each
// thread
//   - scores its 4 rows against keys tx, tx + 16, tx + 32, tx + 48 (a 4×4
//     register tile; q and K rows are read four floats at a time, so one
//     shared load feeds four multiply-adds),
//   - takes each row's tile maximum across its group's 16 threads
//     (shuffles), rescales its accumulators by exp(m_old − m_new), and
//     writes its probabilities to P,
//   - adds P·V to its 4 rows × 8 output columns (4·tx … 4·tx + 3 and the
//     same plus 64), again reading four floats a load.
// The running maximum and each thread's part of the running sum stay in
// registers; the sums are added across the group at the end. No score
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

#define GOMASE_SDPA_ROWS 64    // query rows per block
#define GOMASE_SDPA_KEYS 64    // keys per tile
#define GOMASE_SDPA_THREADS 256
#define GOMASE_SDPA_GROUP 16   // threads sharing a row group
#define GOMASE_SDPA_TROWS 4    // query rows per thread
#define GOMASE_SDPA_TKEYS 4    // keys per thread and tile (tx + 16·i)
#define GOMASE_SDPA_TCOLS 8    // output columns per thread (4·tx + u, 64 + 4·tx + u)
#define GOMASE_SDPA_MAX_D 128  // head_dim limit
#define GOMASE_SDPA_PSTRIDE 68 // floats per row of P (64 keys + 4: rows start on different banks)

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

// gomase_sdpa_d4 is head_dim rounded up to a multiple of 4 (q and K rows
// are zero-padded to it); rows of q and K in shared memory are 4 floats
// longer still, so the rows a load reads start on different banks.
GOMASE_SDPA_FN int gomase_sdpa_d4(int d) { return (d + 3) / 4 * 4; }
GOMASE_SDPA_FN int gomase_sdpa_qstride(int d) { return gomase_sdpa_d4(d) + 4; }

// gomase_sdpa_vstride is the row length of V in shared memory: 64 or 128
// floats, zero-padded past head_dim, so every thread's column loads stay
// inside the row.
GOMASE_SDPA_FN int gomase_sdpa_vstride(int d) { return d <= 64 ? 64 : 128; }

// The shared memory of a block, in floats: q (64 rows), K (64 keys), V (64
// keys) and P (64 rows of GOMASE_SDPA_PSTRIDE). Every part starts on a
// multiple of 4 floats (16 bytes), as the four-float loads need.
GOMASE_SDPA_FN long long gomase_sdpa_smem_floats(int d) {
	return 2LL * GOMASE_SDPA_ROWS * gomase_sdpa_qstride(d) + (long long)GOMASE_SDPA_KEYS * gomase_sdpa_vstride(d) +
	       (long long)GOMASE_SDPA_ROWS * GOMASE_SDPA_PSTRIDE;
}

// One thread's registers.
typedef struct {
	float acc[GOMASE_SDPA_TROWS][GOMASE_SDPA_TCOLS];  // unnormalised output columns
	float m[GOMASE_SDPA_TROWS];                       // running maximum of the row's scores (group-uniform)
	float l[GOMASE_SDPA_TROWS];                       // this thread's part of the running sum
	float s[GOMASE_SDPA_TROWS][GOMASE_SDPA_TKEYS];    // the thread's scores of the current tile
	float mx[GOMASE_SDPA_TROWS];                      // the tile's new maximum, after the group reduction
} gomase_sdpa_state;

// gomase_sdpa_ld4 reads p[0…3] (p 16-byte aligned): one vector load on the
// GPU.
#ifdef __CUDA__
typedef float gomase_sdpa_f4 __attribute__((ext_vector_type(4)));
GOMASE_SDPA_FN void gomase_sdpa_ld4(const float *p, float *o) {
	gomase_sdpa_f4 v = *(const gomase_sdpa_f4 *)p;
	o[0] = v.x;
	o[1] = v.y;
	o[2] = v.z;
	o[3] = v.w;
}
#else
static inline void gomase_sdpa_ld4(const float *p, float *o) {
	o[0] = p[0];
	o[1] = p[1];
	o[2] = p[2];
	o[3] = p[3];
}
#endif

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

// gomase_sdpa_load_q stages rows q0… of q·scale, row i at qs[i·qstride]
// (zeros past seq_q and past head_dim).
GOMASE_SDPA_FN void gomase_sdpa_load_q(const gomase_sdpa_args *a, int half, long long bh, int q0, float *qs, int t) {
	int d = a->head_dim, d4 = gomase_sdpa_d4(d), ld = gomase_sdpa_qstride(d);
	long long base = (bh * a->seq_q + q0) * d;
	for (int x = t; x < GOMASE_SDPA_ROWS * d4; x += GOMASE_SDPA_THREADS) {
		int r = x / d4, c = x - r * d4;
		qs[r * ld + c] = q0 + r < a->seq_q && c < d ? gomase_sdpa_load(a->q, base + (long long)r * d + c, half) * a->scale : 0.0f;
	}
}

GOMASE_SDPA_FN void gomase_sdpa_init(gomase_sdpa_state *st) {
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_TROWS; r++) {
		st->m[r] = -__builtin_inff();
		st->l[r] = 0.0f;
		GOMASE_UNROLL
		for (int c = 0; c < GOMASE_SDPA_TCOLS; c++) st->acc[r][c] = 0.0f;
	}
}

// gomase_sdpa_load_kv stages keys k0… of K (rows of qstride) and V (rows of
// vstride), zeros past seq_k and past head_dim.
GOMASE_SDPA_FN void gomase_sdpa_load_kv(const gomase_sdpa_args *a, int half, long long bh, int k0, float *ks, float *vs,
                                        int t) {
	int d = a->head_dim, ld = gomase_sdpa_qstride(d), dv = gomase_sdpa_vstride(d);
	long long base = (bh * a->seq_k + k0) * d;
	for (int x = t; x < GOMASE_SDPA_KEYS * dv; x += GOMASE_SDPA_THREADS) {
		int j = x / dv, c = x - j * dv;
		int in = k0 + j < a->seq_k && c < d;
		float kv = in ? gomase_sdpa_load(a->k, base + (long long)j * d + c, half) : 0.0f;
		if (c < ld) ks[j * ld + c] = kv;
		vs[x] = in ? gomase_sdpa_load(a->v, base + (long long)j * d + c, half) : 0.0f;
	}
}

// gomase_sdpa_scores: the thread scores its rows against keys
// k0 + tx + 16·i (-Inf past seq_k) and proposes the new maxima.
GOMASE_SDPA_FN void gomase_sdpa_scores(const gomase_sdpa_args *a, long long bh, int q0, int k0, const float *qs,
                                       const float *ks, gomase_sdpa_state *st, int t) {
	int d4 = gomase_sdpa_d4(a->head_dim), ld = gomase_sdpa_qstride(a->head_dim);
	int ty = t / GOMASE_SDPA_GROUP, tx = t % GOMASE_SDPA_GROUP;
	const float *qr = qs + ty * GOMASE_SDPA_TROWS * ld, *kr = ks + tx * ld;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_TROWS; r++) {
		GOMASE_UNROLL
		for (int i = 0; i < GOMASE_SDPA_TKEYS; i++) st->s[r][i] = 0.0f;
	}
	for (int c = 0; c < d4; c += 4) {
		float qv[GOMASE_SDPA_TROWS][4], kv[GOMASE_SDPA_TKEYS][4];
		GOMASE_UNROLL
		for (int r = 0; r < GOMASE_SDPA_TROWS; r++) gomase_sdpa_ld4(qr + r * ld + c, qv[r]);
		GOMASE_UNROLL
		for (int i = 0; i < GOMASE_SDPA_TKEYS; i++) gomase_sdpa_ld4(kr + i * GOMASE_SDPA_GROUP * ld + c, kv[i]);
		GOMASE_UNROLL
		for (int r = 0; r < GOMASE_SDPA_TROWS; r++) {
			GOMASE_UNROLL
			for (int i = 0; i < GOMASE_SDPA_TKEYS; i++) {
				GOMASE_UNROLL
				for (int u = 0; u < 4; u++) st->s[r][i] += qv[r][u] * kv[i][u];
			}
		}
	}
	long long b = bh / a->heads, h = bh % a->heads;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_TROWS; r++) {
		int i = q0 + ty * GOMASE_SDPA_TROWS + r;
		long long mi = i < a->seq_q ? i : a->seq_q - 1; // rows past seq_q are computed, never stored
		float mx = st->m[r];
		GOMASE_UNROLL
		for (int u = 0; u < GOMASE_SDPA_TKEYS; u++) {
			int key = k0 + tx + GOMASE_SDPA_GROUP * u;
			if (key >= a->seq_k) {
				st->s[r][u] = -__builtin_inff();
			} else if (a->mask) {
				st->s[r][u] += a->mask[b * a->mask_stride[0] + h * a->mask_stride[1] + mi * a->mask_stride[2] +
				                       key * a->mask_stride[3]];
			}
			mx = gomase_sdpa_max(mx, st->s[r][u]);
		}
		st->mx[r] = mx;
	}
}

// gomase_sdpa_softmax: with the group's new maxima in mx, rescales the
// accumulators and the sum by exp(m_old - m_new), adds exp(s - m_new) to
// the thread's sum and leaves it in P for the group.
GOMASE_SDPA_FN void gomase_sdpa_softmax(gomase_sdpa_state *st, float *ps, int t) {
	const float log2e = 1.44269504088896341f;
	int ty = t / GOMASE_SDPA_GROUP, tx = t % GOMASE_SDPA_GROUP;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_TROWS; r++) {
		float mn = st->mx[r];
		float base = mn == -__builtin_inff() ? 0.0f : mn; // all -Inf so far: every p is 0
		float corr = gomase_sdpa_exp2((st->m[r] - base) * log2e);
		float sum = 0.0f;
		float *pr = ps + (ty * GOMASE_SDPA_TROWS + r) * GOMASE_SDPA_PSTRIDE + tx;
		GOMASE_UNROLL
		for (int u = 0; u < GOMASE_SDPA_TKEYS; u++) {
			float p = gomase_sdpa_exp2((st->s[r][u] - base) * log2e);
			sum += p;
			pr[GOMASE_SDPA_GROUP * u] = p;
		}
		st->m[r] = mn;
		st->l[r] = st->l[r] * corr + sum;
		GOMASE_UNROLL
		for (int c = 0; c < GOMASE_SDPA_TCOLS; c++) st->acc[r][c] *= corr;
	}
}

// gomase_sdpa_pv adds P·V to the thread's rows and columns (the second
// four columns only when head_dim is over 64).
GOMASE_SDPA_FN void gomase_sdpa_pv(const gomase_sdpa_args *a, int k0, const float *vs, const float *ps,
                                   gomase_sdpa_state *st, int t) {
	int dv = gomase_sdpa_vstride(a->head_dim), ty = t / GOMASE_SDPA_GROUP, tx = t % GOMASE_SDPA_GROUP;
	int left = a->seq_k - k0, keys = left < GOMASE_SDPA_KEYS ? (left + 3) / 4 * 4 : GOMASE_SDPA_KEYS;
	int wide = dv > 64;
	const float *pr = ps + ty * GOMASE_SDPA_TROWS * GOMASE_SDPA_PSTRIDE, *vc = vs + 4 * tx;
	for (int j = 0; j < keys; j += 4) {
		float p[GOMASE_SDPA_TROWS][4];
		GOMASE_UNROLL
		for (int r = 0; r < GOMASE_SDPA_TROWS; r++) gomase_sdpa_ld4(pr + r * GOMASE_SDPA_PSTRIDE + j, p[r]);
		GOMASE_UNROLL
		for (int jj = 0; jj < 4; jj++) {
			float v[GOMASE_SDPA_TCOLS];
			gomase_sdpa_ld4(vc + (j + jj) * dv, v);
			if (wide) {
				gomase_sdpa_ld4(vc + (j + jj) * dv + 64, v + 4);
			} else {
				GOMASE_UNROLL
				for (int u = 4; u < GOMASE_SDPA_TCOLS; u++) v[u] = 0.0f;
			}
			GOMASE_UNROLL
			for (int r = 0; r < GOMASE_SDPA_TROWS; r++) {
				GOMASE_UNROLL
				for (int u = 0; u < GOMASE_SDPA_TCOLS; u++) st->acc[r][u] += p[r][jj] * v[u];
			}
		}
	}
}

// gomase_sdpa_store writes the thread's columns of its rows, divided by
// the row's sum (in l after the group reduction); zeros when it is 0.
GOMASE_SDPA_FN void gomase_sdpa_store(const gomase_sdpa_args *a, int half, long long bh, int q0,
                                      const gomase_sdpa_state *st, int t) {
	int d = a->head_dim, ty = t / GOMASE_SDPA_GROUP, tx = t % GOMASE_SDPA_GROUP;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_TROWS; r++) {
		int i = q0 + ty * GOMASE_SDPA_TROWS + r;
		if (i >= a->seq_q) continue;
		float inv = st->l[r] > 0.0f ? 1.0f / st->l[r] : 0.0f;
		long long base = (bh * a->seq_q + i) * d;
		GOMASE_UNROLL
		for (int u = 0; u < GOMASE_SDPA_TCOLS; u++) {
			int col = 4 * tx + (u & 3) + 64 * (u >> 2);
			if (col >= d) continue;
			float y = st->acc[r][u] * inv;
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

// The group reductions: butterflies over lane bits 0–3, which stay inside
// the 16 threads of a row group.
GOMASE_SDPA_FN float gomase_sdpa_group_max(float v) {
	for (int o = GOMASE_SDPA_GROUP / 2; o > 0; o >>= 1) v = gomase_sdpa_max(v, __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, o, 0x1f));
	return v;
}

GOMASE_SDPA_FN float gomase_sdpa_group_sum(float v) {
	for (int o = GOMASE_SDPA_GROUP / 2; o > 0; o >>= 1) v += __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, o, 0x1f);
	return v;
}

// The group reductions of the rows' maxima (mx) and, at the end, sums (l).
GOMASE_SDPA_FN void gomase_sdpa_reduce_max(gomase_sdpa_state *st, int tid) {
	(void)tid;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_TROWS; r++) st->mx[r] = gomase_sdpa_group_max(st->mx[r]);
}

GOMASE_SDPA_FN void gomase_sdpa_reduce_sum(gomase_sdpa_state *st, int tid) {
	(void)tid;
	GOMASE_UNROLL
	for (int r = 0; r < GOMASE_SDPA_TROWS; r++) st->l[r] = gomase_sdpa_group_sum(st->l[r]);
}
#else
// On the host every phase loops over the block's threads; st holds all
// their states.
#define GOMASE_FOR_THREADS(t) for (int t = 0; t < GOMASE_SDPA_THREADS; t++)
#define GOMASE_STATE(t) (&st[t])
#define GOMASE_SYNC() (void)0
#define GOMASE_SYNCWARP() (void)0

// The host's group reductions: the butterfly of the shuffles, the same
// order of operations as on the GPU.
static inline void gomase_sdpa_butterfly(gomase_sdpa_state *st, int sum) {
	for (int g = 0; g < GOMASE_SDPA_THREADS / GOMASE_SDPA_GROUP; g++) {
		gomase_sdpa_state *gs = st + GOMASE_SDPA_GROUP * g;
		for (int r = 0; r < GOMASE_SDPA_TROWS; r++) {
			float v[GOMASE_SDPA_GROUP], nv[GOMASE_SDPA_GROUP];
			for (int x = 0; x < GOMASE_SDPA_GROUP; x++) v[x] = sum ? gs[x].l[r] : gs[x].mx[r];
			for (int o = GOMASE_SDPA_GROUP / 2; o > 0; o >>= 1) {
				for (int x = 0; x < GOMASE_SDPA_GROUP; x++)
					nv[x] = sum ? v[x] + v[x ^ o] : gomase_sdpa_max(v[x], v[x ^ o]);
				for (int x = 0; x < GOMASE_SDPA_GROUP; x++) v[x] = nv[x];
			}
			for (int x = 0; x < GOMASE_SDPA_GROUP; x++) *(sum ? &gs[x].l[r] : &gs[x].mx[r]) = v[x];
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
// floats, 16-byte aligned; st is the thread's state on the GPU, all 256
// on the host.
GOMASE_SDPA_FN void gomase_sdpa_block(const gomase_sdpa_args *a, int half, int qblock, long long bh, float *smem,
                                      gomase_sdpa_state *st, int tid) {
	(void)tid;
	int d = a->head_dim, q0 = qblock * GOMASE_SDPA_ROWS, ld = gomase_sdpa_qstride(d);
	float *qs = smem, *ks = qs + GOMASE_SDPA_ROWS * ld, *vs = ks + GOMASE_SDPA_KEYS * ld,
	      *ps = vs + GOMASE_SDPA_KEYS * gomase_sdpa_vstride(d);
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
		GOMASE_SYNCWARP(); // the group's P written (a group is half a warp)
		GOMASE_FOR_THREADS(t) gomase_sdpa_pv(a, k0, vs, ps, GOMASE_STATE(t), t);
		GOMASE_SYNC(); // K, V and P read before the next tile overwrites them
	}
	gomase_sdpa_reduce_sum(st, tid);
	GOMASE_FOR_THREADS(t) gomase_sdpa_store(a, half, bh, q0, GOMASE_STATE(t), t);
}

#endif
