// The W side of the AVX-512 VNNI NVFP4 kernels, shared by nvfp4_gemv_vnni.cc
// (x as 24- or 16-bit fixed point) and nvfp4_w4a4_vnni.cc (x as NVFP4): W's codes
// as unsigned bytes for vpdpbusd, its block scales, and the loop that streams
// W's rows and multiplies each pair of steps by the x side's PairSum.
//
// Include only between `#pragma GCC target(...avx512vnni)` push and pop (see
// nvfp4_gemv_vnni.cc: no -m flags on these files), and only from those two
// files: everything here has internal linkage in each. Each is compiled twice:
// as itself (TERN_VNNI_VPERMB 0), and with TERN_VNNI_VPERMB 1 and avx512vbmi
// added to the target (nvfp4_*_vnni_vpermb.cc), which changes only
// DecodeCodes; the including file defines the macro before its pragma.
//
// Layout. A step is 128 elements of K: 64 bytes of W, byte b holding element
// 2b (low nibble) and 2b + 1 (high nibble), 8 bytes a block of 16. Steps are
// taken in pairs (s, s + 1), s even, the count padded to even with a zero step
// (PaddedSteps), and a pair's 16 blocks are read block-major: one dword
// permutation of the two steps' bytes (vpermt2d) gives the vector h = 0 whose
// lane j holds the first 4 bytes (elements 0 .. 7) of the pair's block j
// (block j of step s for j < 8, block j - 8 of step s + 1 after), and h = 1
// the last 4 (elements 8 .. 15). Masked low nibbles ("even": element 2i of
// the 4-byte group in byte i) and high nibbles ("odd") of both vectors feed
// vpdpbusd into the same accumulator, so lane j ends with block j's whole sum:
// one conversion, one scale decode (the pair's 16 scale bytes, in order) and
// one FMA a pair, with no adding of lanes. The x sides store their bytes in
// that order. The row's last pair (partial steps, or an unpaired whole one)
// is read by masked loads.
//
// Against the step-major order it replaced (each 8-element lane summed alone,
// then each block's two lanes added across the pair by a blend, a vpermt2d
// and an add), a one-row pair loop with everything in L1 took 19.8-20.2
// cycles instead of 25.2-26.1 (AMD Zen 4, x 16-bit; the step-major loop with
// its digit sums shifted and added per step, this one per pair).
#pragma once

#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/ops.h"

namespace tern::kernels::vnni {
namespace {

constexpr size_t kStep = 128;

// W's codes are requested this far ahead of the step being read. The
// hardware prefetchers alone kept one row's stream at 16.5 GB/s per core
// against 23.5 for a plain read (the kernel's compute between loads slows
// their ramp): BM_MatMul<NVFP4>/1, 2 threads, AMD Zen 5, medians of 3 in 2
// interleaved rounds: 2048 x 1024 20-22 -> 27 GB/s, 1024 x 3072 21-22 -> 25,
// 151936 x 1024 31-32 -> 33-36; one thread: 512 B to 2 KiB ahead slower or
// no better, 4 KiB best, 8-16 KiB within noise.
//
// The requests go to L2 (prefetcht1), 8 KiB ahead: on AMD Zen 4 (2 threads,
// medians of 3, three interleaved rounds) against L1 requests 4 KiB ahead,
// 2048 x 1024 79-84 -> 100-102 GFLOP/s, 1024 x 3072 76-78 -> 78-81, 151936 x
// 1024 87-88 -> 109-110, W4A4 151936 x 1024 101-105 -> 118-119. On the
// 151936 x 1024 shape in other rounds: L2 requests 16-32 KiB ahead 96-109
// (the same within noise), L1 requests 2 KiB ahead 91-93 against 98-111 for
// these, L1 requests 1 KiB ahead added to these 81-85 against 91-107. (The
// L1's miss buffers are the scarcer; on Zen 5, where the 4 KiB L1 distance
// was chosen, L2 requests were not tried.)
//
// Where the prefetched address enters a new 4 KiB page, one byte of it is
// also loaded: the translation is then in the TLB for the prefetches that
// follow (a software prefetch that misses the TLB may be dropped). qwen3-0.6b
// NVFP4 decode (`tern bench`, 2 threads, Zen 5, seven interleaved pairs, the
// weights mapped from 4 KiB and from 2 MiB pages): 1.06x median (0.82-1.11,
// the 0.82 under another tenant's load); moe-small NVFP4 0.99-1.04x.
constexpr size_t kPrefetchBytes = 8192;
// The steps an x side prepares for K: whole pairs (a zero step pads an odd count).
size_t PaddedSteps(size_t K) { return ((K + 2 * kStep - 1) / (2 * kStep)) * 2; }

// u = 2 * value + 12 of each E2M1 code (sign bit 3): bytes for vpshufb.
constexpr int8_t kU[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

struct Consts {
  __m512i table, mask, e4m3_bits, first_half, second_half;
  __m512 e4m3_unit;
  Consts() {
    table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kU)));
    mask = _mm512_set1_epi8(0x0f);
    e4m3_bits = _mm512_set1_epi32(int32_t(0x87F00000u));
    e4m3_unit = _mm512_set1_ps(0x1p120f);
    // vpermt2d indices over (step s, step s + 1): each block's first dword (bytes 0 .. 3), then its second.
    first_half = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    second_half = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  }
};

// The W side of a pair of steps: codes as u bytes, block-major (h = 0: each
// block's elements 0 .. 7, h = 1: 8 .. 15; even and odd elements apart), and
// the 16 E4M3 block scales as f32, lane j: the pair's block j.
struct WPair {
  __m512i ue[2], uo[2];  // [h]
  __m512 scale;
};

// ue: u of the low nibbles of w's bytes, uo: of the high ones. vpshufb
// indexes its 16-byte table by the low 4 bits of each byte and would read a
// set bit 7 as "zero", so each nibble is masked first. vpermb (AVX512-VBMI,
// the TERN_VNNI_VPERMB build) indexes 64 bytes by the low 6 bits, and
// `table` holds kU four times, so the 2 bits above a nibble (the high
// nibble's low bits, or after the 16-bit shift the next byte's) pick the
// same entry: no mask. Stand-alone pair loop, everything in L1, AMD Zen 4,
// x 16-bit: 19.8-19.9 cycles a pair with vpshufb, 17.8-18.1 with vpermb.
inline void DecodeCodes(const Consts& c, __m512i w, __m512i& ue, __m512i& uo) {
#if TERN_VNNI_VPERMB
  ue = _mm512_permutexvar_epi8(w, c.table);
  uo = _mm512_permutexvar_epi8(_mm512_srli_epi16(w, 4), c.table);
#else
  ue = _mm512_shuffle_epi8(c.table, _mm512_and_si512(w, c.mask));
  uo = _mm512_shuffle_epi8(c.table, _mm512_and_si512(_mm512_srli_epi16(w, 4), c.mask));
#endif
}

// E4M3 as wload::E4M3Load decodes it: sign-extend, << 20, mask, * 2^120.
inline __m512 DecodeScales(const Consts& c, __m128i b) {
  const __m512i v = _mm512_cvtepi8_epi32(b);
  return _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(v, 20), c.e4m3_bits)), c.e4m3_unit);
}

// The pair's codes a (step s) and b (step s + 1) block-major, decoded.
inline void DecodePair(const Consts& c, __m512i a, __m512i b, WPair& p) {
  DecodeCodes(c, _mm512_permutex2var_epi32(a, c.first_half, b), p.ue[0], p.uo[0]);
  DecodeCodes(c, _mm512_permutex2var_epi32(a, c.second_half, b), p.ue[1], p.uo[1]);
}

// Two whole steps of a row from step s: 128 bytes of codes, 16 scale bytes.
inline WPair LoadPair(const Consts& c, const uint8_t* row, const uint8_t* scales) {
  WPair p;
  DecodePair(c, _mm512_loadu_si512(row), _mm512_loadu_si512(row + 64), p);
  p.scale = DecodeScales(c, _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
  return p;
}

// An x side's 16 bytes of one block, deinterleaved (dwords: elements 0 2 4 6,
// 8 .. 14, 1 .. 7, 9 .. 15), stored at the block's lane (see Layout): the
// even and odd bytes of elements 0 .. 7 in the pair's first step (even0,
// odd0), of 8 .. 15 in its second (even1, odd1).
inline void StoreBlock(__m128i bytes, int8_t* even0, int8_t* even1, int8_t* odd0, int8_t* odd1) {
  const int v[4] = {_mm_cvtsi128_si32(bytes), _mm_extract_epi32(bytes, 1), _mm_extract_epi32(bytes, 2),
                    _mm_extract_epi32(bytes, 3)};
  std::memcpy(even0, &v[0], 4);
  std::memcpy(even1, &v[1], 4);
  std::memcpy(odd0, &v[2], 4);
  std::memcpy(odd1, &v[3], 4);
}

inline __mmask64 FirstBytes(size_t n) { return n >= 64 ? ~__mmask64(0) : (__mmask64(1) << n) - 1; }

// The row's last pair: e0 and e1 elements (multiples of 16; e1 > 0 only when
// e0 = kStep) of the two steps and their (e0 + e1) / 16 scales, the rest
// zero (x is zero there too, and a zero scale byte is 0). Masked loads: no
// byte past the row is touched (a copy to a zeroed buffer instead cost 1.7x
// on 192 x 192, the demo models' shape).
inline WPair LoadLastPair(const Consts& c, const uint8_t* row, const uint8_t* scales, size_t e0, size_t e1) {
  WPair p;
  DecodePair(c, _mm512_maskz_loadu_epi8(FirstBytes(e0 / 2), row), _mm512_maskz_loadu_epi8(FirstBytes(e1 / 2), row + 64), p);
  const __mmask16 sm = __mmask16((1u << ((e0 + e1) / 16)) - 1);
  p.scale = DecodeScales(c, _mm_maskz_loadu_epi8(sm, scales));
  return p;
}

// acc[j] + one pair of steps (p[0], p[1]) of one row of x against NW rows of
// W, for an x side X whose PairSum(ue, uo, p) gives lane j the exact integer
// sum over the pair's block j and whose p[0].step holds the x block
// multipliers in the same order.
template <class X, size_t NW>
inline void PairDot(const WPair (&w)[NW], const typename X::Step* p, __m512 (&acc)[NW]) {
  const __m512 xs = _mm512_load_ps(p[0].step);
  for (size_t j = 0; j < NW; ++j) {
    const __m512i blocks = X::PairSum(w[j].ue, w[j].uo, p);
    acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(blocks), _mm512_mul_ps(w[j].scale, xs), acc[j]);
  }
}

// y[r][n .. n + NW) = (x[r] · W[n + j]) * global_scale * out_scale for NW
// consecutive rows of w from n and the R rows of x (X's prepared steps,
// steps[r * stride + s]; PairDot<X> takes a pair of them). Each W row is read as one sequential stream,
// prefetched kPrefetchBytes ahead while that stays inside the task's rows
// (before row n1: past it, another task's or no matrix's bytes).
template <class X, size_t R, size_t NW>
void RowGroup(const Consts& c, const typename X::Step* steps, size_t stride, const MatrixView& w, size_t n,
              size_t n1, float* y, size_t ldy, float out_scale) {
  const size_t K = size_t(w.cols);
  const size_t full = K / kStep;  // whole steps; K - full * kStep (a multiple of 16) is left
  const size_t row_bytes = size_t(w.row_stride) / 2, srow_bytes = size_t(w.scale_stride);
  const uint8_t* r[NW];
  const uint8_t* sr[NW];
  for (size_t j = 0; j < NW; ++j) {
    r[j] = static_cast<const uint8_t*>(w.data) + (n + j) * row_bytes;
    sr[j] = static_cast<const uint8_t*>(w.scales) + (n + j) * srow_bytes;
  }
  __m512 acc[R][NW];
  for (size_t i = 0; i < R; ++i)
    for (size_t j = 0; j < NW; ++j) acc[i][j] = _mm512_setzero_ps();
  WPair wp[NW];
  const bool ahead = (n1 - n - NW) * row_bytes >= kPrefetchBytes;  // the rows after these hold the prefetched bytes
  size_t s = 0;
  for (; s + 2 <= full; s += 2) {
    for (size_t j = 0; j < NW; ++j) {
      if (ahead) {
        const char* at = reinterpret_cast<const char*>(r[j] + s * (kStep / 2) + kPrefetchBytes);
        _mm_prefetch(at, _MM_HINT_T1);
        _mm_prefetch(at + 64, _MM_HINT_T1);
        if ((reinterpret_cast<uintptr_t>(at) & 4095) < 128) {  // a new page (two lines a pair)
          const char v = *reinterpret_cast<const volatile char*>(at);  // inside rows [n, n1): `ahead`
          asm volatile("" ::"r"(v));
        }
      }
      wp[j] = LoadPair(c, r[j] + s * (kStep / 2), sr[j] + s * 8);
    }
    for (size_t i = 0; i < R; ++i) PairDot<X>(wp, steps + i * stride + s, acc[i]);
  }
  if (s * kStep < K) {  // one or two partial steps are left
    const size_t e0 = std::min(K - s * kStep, kStep), e1 = K - s * kStep - e0;
    for (size_t j = 0; j < NW; ++j) wp[j] = LoadLastPair(c, r[j] + s * (kStep / 2), sr[j] + s * 8, e0, e1);
    for (size_t i = 0; i < R; ++i) PairDot<X>(wp, steps + i * stride + s, acc[i]);
  }
  for (size_t i = 0; i < R; ++i)
    for (size_t j = 0; j < NW; ++j) y[i * ldy + n + j] = _mm512_reduce_add_ps(acc[i][j]) * w.global_scale * out_scale;
}

// The L1 data cache's size (sysconf; 32 KiB where it does not say).
inline size_t L1DataBytes() {
  static const size_t bytes = [] {
    const long v = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return v > 0 ? size_t(v) : size_t(32768);
  }();
  return bytes;
}

// y[r][n] for rows [n0, n1) of w and the R rows of x, one W row at a time:
// W is then read as one sequential stream (rows are contiguous), prefetched
// kPrefetchBytes ahead. Two W rows side by side share the loads of x, which
// pays once the R prepared rows of x outgrow L1 and each step's x comes from
// L2: BM_Gemv<NVFP4> 8 rows of 2048 x 2048 (64 KiB of W4A16's prepared x
// against Zen 5's 48 KiB L1), 2 threads, two rounds, 403-458 us against
// 665-758; where x fits (6 rows of that, 4 rows, W4A4's 8 rows of 2048
// elements) two rows were 1.05-1.3x slower, and for one row of x from
// memory 0.85-0.97x (Zen 5; Zen 4 without the prefetch: four rows 1.1-1.2x
// slower from memory, 1.15x faster in L2). Under 4 rows of x this L1 rule is
// not compiled: their x passes L1 only from K ~ 8192, never measured.
//
// Rows of at most one pair of steps (K <= 256, the demo models' 192) are
// short enough that each RowGroup call's setup and final sum weigh: there
// four W rows a call for one row of x, two for 2-4 rows (one contiguous
// stretch of W, no extra stream). BM_MatMul<NVFP4,L2> 1 x 192 x 192, one
// thread, AMD Zen 4, three interleaved rounds: 2.19-2.22 -> 1.92-1.97 us;
// 1 x 768 x 192 8.03-8.10 -> 6.83-6.99; 4 x 192 x 192 5.61-5.70 -> 5.25-5.27.
template <class X, size_t R>
void Rows(const Consts& c, const typename X::Step* steps, size_t stride, const MatrixView& w, size_t n0, size_t n1,
          float* y, size_t ldy, float out_scale) {
  size_t n = n0;
  if constexpr (R <= 4) {
    constexpr size_t kShortRows = R == 1 ? 4 : 2;  // W rows a call, rows of one pair of steps
    if (size_t(w.cols) <= 2 * kStep)
      for (; n + kShortRows <= n1; n += kShortRows)
        RowGroup<X, R, kShortRows>(c, steps, stride, w, n, n1, y, ldy, out_scale);
  }
  if constexpr (R >= 4) {
    if (R * stride * sizeof(typename X::Step) > L1DataBytes())
      for (; n + 2 <= n1; n += 2) RowGroup<X, R, 2>(c, steps, stride, w, n, n1, y, ldy, out_scale);
  }
  for (; n < n1; ++n) RowGroup<X, R, 1>(c, steps, stride, w, n, n1, y, ldy, out_scale);
}

// Rows<X, M> for M = 1 .. kMaxRows (the rows of x of one call).
template <class X>
void RowsOfM(size_t M, const Consts& c, const typename X::Step* steps, size_t stride, const MatrixView& w, size_t n0,
             size_t n1, float* y, size_t ldy, float out_scale) {
  switch (M) {
    case 1: return Rows<X, 1>(c, steps, stride, w, n0, n1, y, ldy, out_scale);
    case 2: return Rows<X, 2>(c, steps, stride, w, n0, n1, y, ldy, out_scale);
    case 3: return Rows<X, 3>(c, steps, stride, w, n0, n1, y, ldy, out_scale);
    case 4: return Rows<X, 4>(c, steps, stride, w, n0, n1, y, ldy, out_scale);
    case 5: return Rows<X, 5>(c, steps, stride, w, n0, n1, y, ldy, out_scale);
    case 6: return Rows<X, 6>(c, steps, stride, w, n0, n1, y, ldy, out_scale);
    case 7: return Rows<X, 7>(c, steps, stride, w, n0, n1, y, ldy, out_scale);
    default: return Rows<X, 8>(c, steps, stride, w, n0, n1, y, ldy, out_scale);
  }
}

}  // namespace
}  // namespace tern::kernels::vnni
