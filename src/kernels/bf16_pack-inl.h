// The pieces the two BF16-activation GEMMs share (matmul_amx.cc on the tile
// unit, matmul_bf16dot.cc on AVX512-BF16's vdpbf16ps): x rounded to BF16,
// rows of W in any format decoded exactly to BF16, and the 16x16 transpose of
// 32-bit units (BF16 pairs, or f32) both layouts are built with.
//
// Include only inside a `#pragma GCC target` region that enables AVX-512 F,
// BW, DQ, VL and BF16 (both users do). Everything here has internal linkage
// (an unnamed namespace, deliberately, in a header): an inline function with
// external linkage instantiated under the pragma would be AVX-512 code that
// the linker may pick for a caller compiled without it (see
// nvfp4_gemv_vnni.cc).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace tern::kernels::bf16pack {
namespace {  // NOLINT(build/namespaces): internal linkage on purpose, see above

// r[i] = row i of a 16x16 matrix of 32-bit units -> r[j] = column j.
inline void Transpose16x16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // Per 128-bit lane, u[4q + c] holds column c (of the lane's four) of rows 4q .. 4q + 3.
  for (int q = 0; q < 16; q += 4) {
    u[q] = _mm512_unpacklo_epi64(t[q], t[q + 2]);
    u[q + 1] = _mm512_unpackhi_epi64(t[q], t[q + 2]);
    u[q + 2] = _mm512_unpacklo_epi64(t[q + 1], t[q + 3]);
    u[q + 3] = _mm512_unpackhi_epi64(t[q + 1], t[q + 3]);
  }
  // Lane l of u[4q + c] is column 4l + c of rows 4q .. 4q + 3: gather the lanes.
  for (int c = 0; c < 4; ++c) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);   // lanes 0, 2 of rows 0-3, 4-7
    const __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);   // lanes 1, 3
    const __m512i w0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
    const __m512i w1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_shuffle_i32x4(v0, w0, 0x88);       // column c
    r[8 + c] = _mm512_shuffle_i32x4(v0, w0, 0xdd);   // column 8 + c
    r[4 + c] = _mm512_shuffle_i32x4(v1, w1, 0x88);   // column 4 + c
    r[12 + c] = _mm512_shuffle_i32x4(v1, w1, 0xdd);  // column 12 + c
  }
}

// Elements [0, n) of a row of f32 as 32 BF16 (RNE), zeros past n (n <= 32):
// 16 pairs, pair p = elements (2p, 2p + 1) in the low / high half of unit p.
inline __m512i RowToBf16(const float* row, size_t n) {
  const __mmask16 lo = n >= 16 ? 0xffff : __mmask16((1u << n) - 1);
  const __mmask16 hi = n >= 32 ? 0xffff : n <= 16 ? 0 : __mmask16((1u << (n - 16)) - 1);
  const __m512 a = _mm512_maskz_loadu_ps(lo, row);
  const __m512 b = _mm512_maskz_loadu_ps(hi, row + 16);
  return __m512i(_mm512_cvtne2ps_pbh(b, a));
}

// Bytes of W per two elements (NVFP4 1, FP8 2, BF16 4): a row's bytes are
// row_stride * this / 2.
inline size_t BytesPer2(const MatrixView& w) {
  return w.format == WeightFormat::kNvfp4 ? 1 : w.format == WeightFormat::kFp8 ? 2 : 4;
}

// Values of the 16 E2M1 codes.
inline __m512 E2m1Table() {
  return _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f,
                        -4.0f, -6.0f);
}

// Row n of W over K [k0, k0 + n_k) (n_k <= 32; k0 a multiple of 32) as 32
// BF16, zeros past n_k. Every format's values are exact in BF16 (NVFP4
// without its per-tensor global scale, which the caller multiplies the f32
// result by; FP8 without its block scales). e4m3: E4M3Values().
inline __m512i DecodeRowStep(const MatrixView& w, size_t n, size_t k0, size_t n_k, const float* e4m3) {
  __m512i v;
  if (w.format == WeightFormat::kNvfp4) {
    // 16 bytes of codes (fewer at a K tail of 16), element 2b in byte b's low nibble.
    const uint8_t* codes = static_cast<const uint8_t*>(w.data) + n * size_t(w.row_stride) / 2 + k0 / 2;
    const uint8_t* sc = static_cast<const uint8_t*>(w.scales) + n * size_t(w.scale_stride) + k0 / 16;
    const __m128i b = _mm_maskz_loadu_epi8(__mmask16(n_k >= 32 ? 0xffff : 0x00ff), codes);
    const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0f));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0f));
    const __m512i c0 = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));  // elements 0-15
    const __m512i c1 = _mm512_cvtepu8_epi32(_mm_unpackhi_epi8(lo, hi));  // 16-31
    const __m512 table = E2m1Table();
    const __m512 f0 = _mm512_mul_ps(_mm512_permutexvar_ps(c0, table), _mm512_set1_ps(e4m3[sc[0]]));
    const __m512 f1 = n_k >= 32 ? _mm512_mul_ps(_mm512_permutexvar_ps(c1, table), _mm512_set1_ps(e4m3[sc[1]]))
                                : _mm512_setzero_ps();
    v = __m512i(_mm512_cvtne2ps_pbh(f1, f0));
  } else if (w.format == WeightFormat::kFp8) {
    // e4m3 bits << 7 as F16 is the value times 2^-8, subnormals included (both have 3 mantissa bits).
    const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * size_t(w.row_stride) + k0;
    const __m256i b = _mm256_maskz_loadu_epi8(n_k >= 32 ? ~__mmask32(0) : __mmask32((1u << n_k) - 1), row);
    const __m512i h = _mm512_cvtepu8_epi16(b);
    const __m512i bits = _mm512_or_si512(_mm512_slli_epi16(_mm512_and_si512(h, _mm512_set1_epi16(0x80)), 8),
                                         _mm512_slli_epi16(_mm512_and_si512(h, _mm512_set1_epi16(0x7f)), 7));
    const __m512 scale = _mm512_set1_ps(256.0f);
    const __m512 f0 = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(bits)), scale);
    const __m512 f1 = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(bits, 1)), scale);
    // e4m3 NaN (0x7f, 0xff) became an F16 normal: restore it.
    const __mmask32 nan = _mm256_cmpeq_epi8_mask(_mm256_and_si256(b, _mm256_set1_epi8(0x7f)), _mm256_set1_epi8(0x7f));
    v = __m512i(_mm512_cvtne2ps_pbh(f1, f0));
    v = _mm512_mask_mov_epi16(v, nan, _mm512_set1_epi16(0x7fc0));
  } else {  // BF16
    const uint16_t* row = static_cast<const uint16_t*>(w.data) + n * size_t(w.row_stride) + k0;
    v = _mm512_maskz_loadu_epi16(n_k >= 32 ? ~__mmask32(0) : __mmask32((1u << n_k) - 1), row);
  }
  return v;
}

}  // namespace
}  // namespace tern::kernels::bf16pack
