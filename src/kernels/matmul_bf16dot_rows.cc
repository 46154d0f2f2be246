// The AVX512-BF16 GEMM for few rows of x (matmul_bf16dot.h RowsGemm): W read
// in place, one sequential stream per row, no panel packing.
//
// Why. bf16dot::Gemm packs each 48-row panel of W pair-major (a decode, a
// 16x16 transpose and a store per 16 rows and 32 columns) and then runs its
// micro-kernel over the packed panel. The packing phase streams W from memory
// while no product runs, and the product phase runs while no W is read; with
// few rows of x to share a panel the packing is most of the time:
// BM_Bf16Dot<BF16> 8 / 12 / 16 / 32 x 151936 x 1024 (a vocabulary-sized
// lm_head; AMD Zen 4, 2 threads) took 23.1 / 26.0 / 29.2 / 40.6 ms, about
// 17 ms plus 0.73 ms a row, where the products alone are 0.68 ms a row.
//
// How. A lane of VDPBF16PS multiplies a pair (k, k + 1) of one operand by the
// same pair of the other, so a W row's BF16 pairs as stored (or as
// bf16pack::DecodeRowStep decodes 32 columns of NVFP4 or FP8) meet x's pairs
// lane for lane: no transpose. A tile of kRows rows of x and NW rows of W keeps
// kRows * NW accumulators of 16 lanes over the whole of K (lane l: the pairs
// l, l + 16, ... of the 32-column steps); the 16 lanes are added at the end.
// W is decoded once per step for all the tile's rows and its loads are
// requested kAheadBytes ahead in the task's rows, so loads and products
// overlap. x is rounded to BF16 once per call (RNE, as PackX), each row's
// pairs contiguous and zero-padded to whole steps.
//
// Numerics: bf16dot::Gemm's (matmul_bf16dot.h): the same BF16 x, exact
// products and f32 sums, in another order (16 lane sums, then a tree of
// adds): within the same bound.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "kernels/matmul_bf16dot.h"
#include "kernels/scratch.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#include "kernels/bf16_pack-inl.h"  // (under the pragma: its functions are AVX-512 code)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tern::kernels::bf16dot {
namespace {

using bf16pack::DecodeRowStep;
using bf16pack::RowToBf16;

constexpr size_t kStep = 32;  // columns per step (16 pairs, one vector)
// W's loads are requested this far ahead of the step being read, into L2,
// while the address stays inside the task's rows.
constexpr size_t kAheadBytes = 4096;
// W rows a tile takes: tiles of kRowsGemmMaxTile x 2 keep 24 accumulators.
// (Three or more W rows a tile measured 1.5-2.3x slower from memory: AMD Zen
// 4, 2 threads, 4-8 rows of x by 151936 x 1024 BF16.)
constexpr size_t kGroupRows = 2;

// The sum of each of v[0 .. n) (n <= 16) in lane i of one vector: a tree of
// in-register adds (two shuffles and an add per pair of vectors a level).
inline __m512 SumLanes16(__m512 (&v)[16]) {
  // Level 1: quarters (A0 + A2, A1 + A3, B0 + B2, B1 + B3) of pairs (a, b).
  __m512 l1[8];
  for (int i = 0; i < 8; ++i)
    l1[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                          _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  // Level 2: quarter q of l2[i] holds 4 partial sums of v[4i + q].
  __m512 l2[4];
  for (int i = 0; i < 4; ++i)
    l2[i] = _mm512_add_ps(_mm512_shuffle_f32x4(l1[2 * i], l1[2 * i + 1], 0x88),
                          _mm512_shuffle_f32x4(l1[2 * i], l1[2 * i + 1], 0xDD));
  // Level 3: quarter q of l3[i] = (two halves of v[8i + q], of v[8i + 4 + q]).
  __m512 l3[2];
  for (int i = 0; i < 2; ++i)
    l3[i] = _mm512_add_ps(_mm512_shuffle_ps(l2[2 * i], l2[2 * i + 1], 0x88),
                          _mm512_shuffle_ps(l2[2 * i], l2[2 * i + 1], 0xDD));
  // Level 4: quarter q = (v[q], v[4 + q], v[8 + q], v[12 + q]).
  const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(l3[0], l3[1], 0x88), _mm512_shuffle_ps(l3[0], l3[1], 0xDD));
  // Lane 4q + j holds v[4j + q]: put v[i] in lane i.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, s);
}

// How a tile gets W's BF16 pairs: decoded from W (BF16: loaded), decoded
// and also stored to wbuf (the first of several tiles of NVFP4 or FP8 W), or
// loaded from wbuf (the tiles after it: a decode costs several operations a
// step, a load one).
enum class WFrom { kDecode, kDecodeAndKeep, kKept };

// y[i][n + j] = scale * (row i of xs) . (W row n + j) for i < R (row i's
// pairs at xs + i * K2p) and j < NW, over K in steps of 32 columns. W's bytes
// before `end` are the task's: read-ahead requests stop there (past it they
// would fetch another task's rows). wbuf: NW * K2p uint32, used by kDecodeAndKeep
// and kKept only.
template <size_t R, size_t NW, WFrom kFrom>
void Tile(const uint32_t* xs, size_t K2p, const MatrixView& w, size_t n, const float* e4m3, const char* end,
          uint32_t* wbuf, float* y, size_t ldy, float scale) {
  const size_t K = size_t(w.cols);
  const size_t bytes2 = bf16pack::BytesPer2(w);
  const size_t row_bytes = size_t(w.row_stride) * bytes2 / 2, step_bytes = kStep * bytes2 / 2;
  const char* base = static_cast<const char*>(w.data);
  __m512 acc[R][NW];
  for (size_t i = 0; i < R; ++i)
    for (size_t j = 0; j < NW; ++j) acc[i][j] = _mm512_setzero_ps();
  for (size_t s = 0; s < K; s += kStep) {
    const size_t n_k = std::min(kStep, K - s);
    const size_t at = s * bytes2 / 2 + kAheadBytes;
    if (kFrom != WFrom::kKept && at % 64 < step_bytes) {  // a new line of each row
      for (size_t j = 0; j < NW; ++j) {
        const char* p = base + (n + j) * row_bytes + at;
        if (p < end) _mm_prefetch(p, _MM_HINT_T1);
      }
    }
    __m512bh wv[NW];
    for (size_t j = 0; j < NW; ++j) {
      if constexpr (kFrom == WFrom::kKept) {
        wv[j] = (__m512bh)_mm512_load_si512(wbuf + j * K2p + s / 2);
      } else {
        const __m512i v = DecodeRowStep(w, n + j, s, n_k, e4m3);
        if constexpr (kFrom == WFrom::kDecodeAndKeep) _mm512_store_si512(wbuf + j * K2p + s / 2, v);
        wv[j] = (__m512bh)v;
      }
    }
    for (size_t i = 0; i < R; ++i) {
      const __m512bh xv = (__m512bh)_mm512_load_si512(xs + i * K2p + s / 2);
      for (size_t j = 0; j < NW; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[j], xv);
    }
  }
  // The tile's sums, 16 at a time in one vector.
  constexpr size_t kOut = R * NW;
  float sums[(kOut + 15) / 16 * 16];
  for (size_t g = 0; g < kOut; g += 16) {
    __m512 v[16];
    for (size_t t = 0; t < 16; ++t) v[t] = g + t < kOut ? acc[(g + t) / NW][(g + t) % NW] : _mm512_setzero_ps();
    _mm512_storeu_ps(sums + g, _mm512_mul_ps(SumLanes16(v), _mm512_set1_ps(scale)));
  }
  for (size_t i = 0; i < R; ++i)
    for (size_t j = 0; j < NW; ++j) y[i * ldy + n + j] = sums[i * NW + j];
}

// W rows [n, n + NW) against every row of x: a tile of R rows of x at a
// time (the last tile may be smaller), so that the tiles after the first read
// those W rows from L1.
template <size_t NW, WFrom kFrom, size_t R = kRowsGemmMaxTile>
void TileFor(size_t r, const uint32_t* xs, size_t K2p, const MatrixView& w, size_t n, const float* e4m3,
             const char* end, uint32_t* wbuf, float* y, size_t ldy, float scale) {
  if constexpr (R >= 1) {
    if (r == R) return Tile<R, NW, kFrom>(xs, K2p, w, n, e4m3, end, wbuf, y, ldy, scale);
    if constexpr (R > 1) TileFor<NW, kFrom, R - 1>(r, xs, K2p, w, n, e4m3, end, wbuf, y, ldy, scale);
  }
}

// wbuf: NW * K2p uint32 (64-byte aligned), or null where W is dense BF16 (its
// pairs are loaded as stored: nothing to keep).
template <size_t NW>
void Group(size_t M, size_t tile, const uint32_t* xs, size_t K2p, const MatrixView& w, size_t n, const float* e4m3,
           const char* end, uint32_t* wbuf, float* y, size_t ldy, float scale) {
  for (size_t m0 = 0; m0 < M; m0 += tile) {
    const size_t r = std::min(tile, M - m0);
    const uint32_t* x = xs + m0 * K2p;
    float* yt = y + m0 * ldy;
    if (wbuf == nullptr || r == M) {
      TileFor<NW, WFrom::kDecode>(r, x, K2p, w, n, e4m3, end, wbuf, yt, ldy, scale);
    } else if (m0 == 0) {
      TileFor<NW, WFrom::kDecodeAndKeep>(r, x, K2p, w, n, e4m3, end, wbuf, yt, ldy, scale);
    } else {
      TileFor<NW, WFrom::kKept>(r, x, K2p, w, n, e4m3, end, wbuf, yt, ldy, scale);
    }
  }
}

}  // namespace

int64_t RowsGemmMaxRows(const MatrixView& w) { return w.format == WeightFormat::kDense ? 64 : 16; }

bool RowsGemmSupports(const MatrixView& w) {
  return Supports(w) && !(w.format == WeightFormat::kFp8 && w.scales != nullptr);
}

void RowsGemm(const float* x, int64_t M_, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  const size_t M = size_t(M_), N = size_t(w.rows), K = size_t(w.cols);
  if (M == 0 || N == 0) return;
  // x in BF16 pairs, row by row, zero-padded to whole steps.
  const size_t K2p = (K + kStep - 1) / kStep * (kStep / 2);
  auto* xs = reinterpret_cast<uint32_t*>(ThreadScratch(ScratchSlot::kMatMulX, M * K2p));
  for (size_t m = 0; m < M; ++m)
    for (size_t s = 0; s < K2p * 2; s += kStep)
      _mm512_store_si512(xs + m * K2p + s / 2,
                         s < K ? RowToBf16(x + m * size_t(ldx) + s, std::min(kStep, K - s)) : _mm512_setzero_si512());
  const float scale = w.format == WeightFormat::kDense ? 1.0f : w.global_scale;
  const float* e4m3 = E4M3Values();
  // Tasks: runs of W rows, about 8 per thread, of 16 rows at least.
  const size_t tasks = std::clamp<size_t>(N / 16, 1, 8 * pool.size());
  const size_t per = ((N + tasks - 1) / tasks + kGroupRows - 1) / kGroupRows * kGroupRows;
  // Rows of x per tile: as few tiles as kRowsGemmMaxTile allows, balanced.
  const size_t tiles = (M + kRowsGemmMaxTile - 1) / kRowsGemmMaxTile, tile = (M + tiles - 1) / tiles;
  const size_t bytes2 = bf16pack::BytesPer2(w);
  const size_t row_bytes = size_t(w.row_stride) * bytes2 / 2;
  const bool keep = tiles > 1 && w.format != WeightFormat::kDense;
  pool.Run((N + per - 1) / per, [&](size_t task, size_t) {
    const size_t n0 = task * per, n1 = std::min(N, n0 + per);
    const char* end = static_cast<const char*>(w.data) + n1 * row_bytes;
    uint32_t* wbuf = keep ? reinterpret_cast<uint32_t*>(ThreadScratch(ScratchSlot::kGemmPanels, kGroupRows * K2p))
                          : nullptr;
    size_t n = n0;
    for (; n + kGroupRows <= n1; n += kGroupRows)
      Group<kGroupRows>(M, tile, xs, K2p, w, n, e4m3, end, wbuf, y, size_t(ldy), scale);
    for (; n < n1; ++n) Group<1>(M, tile, xs, K2p, w, n, e4m3, end, wbuf, y, size_t(ldy), scale);
  });
}

}  // namespace tern::kernels::bf16dot

#pragma GCC diagnostic pop
#pragma GCC pop_options
