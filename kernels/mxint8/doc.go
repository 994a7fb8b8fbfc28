// Package mxint8 is the storage and kernel side of MXINT8 (Lab 4,
// software stream; spec §6.11 and §7.3): values packed as one int8
// mantissa per element plus one uint8 shared exponent per group, the
// dequantisers to bfloat16, a GoMLX graph op that dequantises inside
// compiled graphs, and QLinearPacked / QEmbeddingPacked, leaf modules
// that hold their weights packed and dequantise them on every call.
//
// # Format
//
// Consecutive values form groups of GroupSize (one of GroupSizes: 8, 16,
// 32, 64, 128, 256, 512). A group stores one exponent E (bias 127: the
// float32 exponent field of its largest magnitude after rounding to
// bfloat16) and one int8 mantissa m per value, read as a sign and a 7-bit
// magnitude with the radix point after bit 6, so that
//
//	value = m/64 · 2^(E−127)
//
// Pack computes them as MASE's quantize1d_simulated does (the reference
// maths is mase/quant's MXInt8Quantize; Pack is a bit-exact float32
// rewrite of it). Storage is len(values) mantissa bytes plus one exponent
// byte per group: 8 + 8/GroupSize bits per value (8.25 at 32).
//
// # Partial last group
//
// MASE requires len % group_size == 0. Here the last group may be
// partial: it holds len % GroupSize values and is encoded exactly as if it
// were padded with zeros to a full group (zeros change neither the group's
// exponent nor the other mantissas), but the padding is not stored, so a
// packed tensor of n values takes n + ceil(n/GroupSize) bytes. This lets
// PackLinears pack every Linear, including a 2-label classifier's bias.
//
// # Canonical encodings
//
// The quantiser never produces the mantissa −128, an exponent 255, or an
// exponent 0 in a group with a nonzero mantissa, and on exactly those
// encodings the lab's bit-trick loop disagrees with m/64·2^(E−127): it
// decodes −128 as +0 (|−128| keeps only bit 7), E = 255 as Inf/NaN (the
// bfloat16 all-ones exponent), and E = 0 as a bfloat16 subnormal, which
// has no implicit leading one: (|m| & 63)·2^−132 with bit 6 of |m| set,
// and twice the formula's value without it. NewPacked
// therefore rejects them, and on every encoding it accepts the three
// dequantisers — DequantizeReference (the bit trick), DequantizeFormula
// (m/64·2^(E−127)) and Dequantize (the fast kernel) — and DequantizeGraph
// are bit-exact with each other.
//
// # Throughput
//
// Dequantize runs an AVX-512 or AVX2 loop (GOEXPERIMENT=simd on amd64; a
// scalar loop otherwise): each mantissa is converted to float32 and
// multiplied by the group's 2^(E−133), and the product's upper 16 bits are
// the bfloat16 result (exact: m/64·2^(E−127) has at most 7 significant
// bits). DequantizeGraph does the same with GoMLX ops. The benchmarks
// report GB/s as (packed input bytes + bfloat16 output bytes) / time, next
// to copy() of a []byte of that same total size.
package mxint8
