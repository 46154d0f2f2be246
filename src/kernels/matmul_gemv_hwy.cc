// MatMul (ops.h): y[M, N] = x[M, K] · W[N, K]^T with W in F32, BF16 or F16,
// written once with Highway and compiled per SIMD target.
//
// Design
// * Tile kernel: an MR x NR block of y as MR*NR dot products along K, with
//   vectors along K. One step consumes S = 2 f32 vectors' worth of K from NR
//   rows of W (converted to f32 in registers) and from MR rows of x, and issues
//   2*MR*NR FMAs. W is never transposed or packed: it is read from the
//   checkpoint's memory, converted on the fly, and each W vector feeds MR rows
//   of x.
// * BF16: a 32-bit lane holds two bf16 (elements 2i and 2i+1, little endian);
//   `lane << 16` and `lane & 0xffff0000` are those two as f32. A step thus
//   costs one load and two integer ops for two vectors of W. The order this
//   yields (even elements, then odd ones) is matched by permuting x once per
//   call (PrepareRows), M*K work against M*N*K.
// * x is copied to per-thread scratch, zero-padded to a multiple of S, so the K
//   tail only needs W's last partial step copied to a zero-filled buffer.
// * Decode (M <= kMaxMR): one row block of M rows with a wide NR, so each x
//   vector feeds several W rows; W is streamed from memory with software
//   prefetch; threads split N.
// * Prefill and batched decode (M > kMaxMR): threads take chunks of NC rows of
//   W; inside a chunk K is cut into KC blocks so that the chunk (NC*KC
//   elements) stays in L2 while each row block of x (MR*KC floats, L1) passes
//   over it. W is therefore read from memory once per call whatever M is.
//
// Register budget (16 vector registers on AVX2, 32 on AVX-512): MR*NR
// accumulators + 2*NR converted W vectors + 2 x vectors, see NRFor.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_gemv_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr int kMaxMR = 6;
constexpr bool kWideRegs = true;  // 32 vector registers
#else
constexpr int kMaxMR = 5;
constexpr bool kWideRegs = false;  // 16 vector registers
#endif

// W rows per tile for a row block of MR rows of x (see the register budget).
constexpr int NRFor(int mr) {
  if (kWideRegs) return mr == 1 ? 8 : mr == 2 ? 6 : mr <= 4 ? 4 : 3;
  return mr == 1 ? 4 : mr == 2 ? 3 : 2;
}

// Loads one step (2 f32 vectors) of a W row starting at element k.
template <DType kDT>
struct WRow;

template <>
struct WRow<DType::kBF16> {
  static constexpr size_t kBytes = 2;
  static HWY_INLINE void Load(const uint8_t* row, size_t k, VF& lo, VF& hi) {
    const DF df;
#if HWY_TARGET == HWY_SCALAR  // one lane cannot hold a pair of bf16
    uint16_t pair[2];
    std::memcpy(pair, row + k * 2, 4);
    lo = hn::Set(df, Bf16ToF32(pair[0]));
    hi = hn::Set(df, Bf16ToF32(pair[1]));
#else
    const hn::RebindToUnsigned<DF> du32;
    const hn::Repartition<uint16_t, DF> du16;
    const auto u = hn::BitCast(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(row) + k));
    lo = hn::BitCast(df, hn::ShiftLeft<16>(u));                    // elements 2i
    hi = hn::BitCast(df, hn::And(u, hn::Set(du32, 0xFFFF0000u)));  // elements 2i + 1
#endif
  }
};

template <>
struct WRow<DType::kF16> {
  static constexpr size_t kBytes = 2;
  static HWY_INLINE void Load(const uint8_t* row, size_t k, VF& lo, VF& hi) {
    const DF df;
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto* p = reinterpret_cast<const hwy::float16_t*>(row) + k;
    lo = hn::PromoteTo(df, hn::LoadU(dh, p));
    hi = hn::PromoteTo(df, hn::LoadU(dh, p + hn::Lanes(df)));
  }
};

template <>
struct WRow<DType::kF32> {
  static constexpr size_t kBytes = 4;
  static HWY_INLINE void Load(const uint8_t* row, size_t k, VF& lo, VF& hi) {
    const DF df;
    const float* p = reinterpret_cast<const float*>(row) + k;
    lo = hn::LoadU(df, p);
    hi = hn::LoadU(df, p + hn::Lanes(df));
  }
};

// Whether x must be stored as (even, odd) halves per step to match WRow::Load.
constexpr bool InterleavedX(DType dt) { return dt == DType::kBF16; }

// One step of the tile: acc[i][j] += W[j][k..k+S) · x[i][k..k+S).
template <DType kDT, int MR, int NR>
HWY_INLINE void TileStep(const float* HWY_RESTRICT x, size_t ldxs, size_t kx, const uint8_t* const* rows, size_t kw,
                         VF (&acc)[MR][NR]) {
  const DF df;
  const size_t L = hn::Lanes(df);
  VF lo[NR], hi[NR];
  HWY_UNROLL(8)
  for (int j = 0; j < NR; ++j) WRow<kDT>::Load(rows[j], kw, lo[j], hi[j]);
  HWY_UNROLL(8)
  for (int i = 0; i < MR; ++i) {
    const VF xl = hn::LoadU(df, x + i * ldxs + kx);
    const VF xh = hn::LoadU(df, x + i * ldxs + kx + L);
    HWY_UNROLL(8)
    for (int j = 0; j < NR; ++j) {
      acc[i][j] = hn::MulAdd(lo[j], xl, acc[i][j]);
      acc[i][j] = hn::MulAdd(hi[j], xh, acc[i][j]);
    }
  }
}

// sums[i * NR + j] = sum over k in [k0, k1) of x[i][k] * W[j][k], where x has
// row stride ldxs (prepared, zero-padded) and rows[j] points at W row j.
// k0 is a multiple of S; k1 is too unless it equals K (the tail).
// With `prefetch`, requests every row ~1 KiB ahead of the loads and, when
// next_rows is not null, the rows of the next tile at the same column: a
// tile's rows are then already in cache when it starts, instead of each row
// starting with a full memory latency (rows are only 2-6 KiB long).
template <DType kDT, int MR, int NR>
HWY_NOINLINE void Tile(const float* HWY_RESTRICT x, size_t ldxs, const uint8_t* const* rows,
                       const uint8_t* const* next_rows, size_t k0, size_t k1, bool prefetch, float* HWY_RESTRICT sums) {
  const DF df;
  const size_t S = 2 * hn::Lanes(df);
  constexpr size_t kBytes = WRow<kDT>::kBytes;
  constexpr size_t kPrefetchBytes = 1024;
  VF acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = hn::Zero(df);

  const size_t kmain = k0 + (k1 - k0) / S * S;
  size_t k = k0;
  if (prefetch) {
    for (; k < kmain; k += S) {
      const size_t byte = k * kBytes;
      if ((byte & 63) < S * kBytes) {  // once per cache line of the rows
        for (int j = 0; j < NR; ++j) hwy::Prefetch(rows[j] + byte + kPrefetchBytes);
        if (next_rows != nullptr)
          for (int j = 0; j < NR; ++j) hwy::Prefetch(next_rows[j] + byte);
      }
      TileStep<kDT, MR, NR>(x, ldxs, k, rows, k, acc);
    }
  } else {
    for (; k < kmain; k += S) TileStep<kDT, MR, NR>(x, ldxs, k, rows, k, acc);
  }
  if (k < k1) {
    // Tail: the last partial step of each W row, zero-padded (x is padded too).
    alignas(64) uint8_t buf[NR][2 * HWY_MAX_BYTES];
    const uint8_t* tail_rows[NR];
    for (int j = 0; j < NR; ++j) {
      std::memset(buf[j], 0, sizeof(buf[j]));
      std::memcpy(buf[j], rows[j] + k * kBytes, (k1 - k) * kBytes);
      tail_rows[j] = buf[j];
    }
    TileStep<kDT, MR, NR>(x, ldxs, k, tail_rows, 0, acc);
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) sums[i * NR + j] = hn::GetLane(hn::SumOfLanes(df, acc[i][j]));
}

// Computes (or, with `accumulate`, adds to) y[0..MR)[n0..n1) the partial
// products over k in [k0, k1) of MR prepared x rows and W rows n0..n1.
template <DType kDT, int MR>
void RowBlock(const float* xs, size_t ldxs, const MatrixView& w, size_t n0, size_t n1, size_t k0, size_t k1, float* y,
              size_t ldy, bool accumulate, bool prefetch) {
  constexpr int NR = NRFor(MR);
  const auto* base = static_cast<const uint8_t*>(w.data);
  const size_t row_bytes = size_t(w.row_stride) * WRow<kDT>::kBytes;
  for (size_t n = n0; n < n1; n += NR) {
    // Past the end of the range, repeat the last row: its results are dropped.
    const uint8_t* rows[NR];
    const uint8_t* next[NR];
    for (int j = 0; j < NR; ++j) {
      rows[j] = base + std::min(n + j, n1 - 1) * row_bytes + k0 * WRow<kDT>::kBytes;
      next[j] = base + std::min(n + NR + j, n1 - 1) * row_bytes + k0 * WRow<kDT>::kBytes;
    }
    float sums[MR * NR];
    Tile<kDT, MR, NR>(xs + k0, ldxs, rows, n + NR < n1 ? next : nullptr, 0, k1 - k0, prefetch, sums);
    const size_t valid = std::min<size_t>(NR, n1 - n);
    for (int i = 0; i < MR; ++i) {
      float* yi = y + i * ldy + n;
      if (accumulate) {
        for (size_t j = 0; j < valid; ++j) yi[j] += sums[i * NR + j];
      } else {
        for (size_t j = 0; j < valid; ++j) yi[j] = sums[i * NR + j];
      }
    }
  }
}

template <DType kDT, int MR = kMaxMR>
void RowBlockFor(size_t mr, const float* xs, size_t ldxs, const MatrixView& w, size_t n0, size_t n1, size_t k0,
                 size_t k1, float* y, size_t ldy, bool accumulate, bool prefetch) {
  if constexpr (MR >= 1) {
    if (mr == MR) return RowBlock<kDT, MR>(xs, ldxs, w, n0, n1, k0, k1, y, ldy, accumulate, prefetch);
    if constexpr (MR > 1) RowBlockFor<kDT, MR - 1>(mr, xs, ldxs, w, n0, n1, k0, k1, y, ldy, accumulate, prefetch);
  }
}

// Copies rows [m0, m1) of x into xs (row stride kp, zero-padded), permuted per
// step into (even, odd) halves when `interleave`.
void PrepareRows(const float* x, size_t ldx, size_t m0, size_t m1, size_t K, size_t kp, bool interleave, float* xs) {
  const DF df;
  const size_t L = hn::Lanes(df);
  for (size_t m = m0; m < m1; ++m) {
    const float* src = x + m * ldx;
    float* dst = xs + m * kp;
    if (!interleave || L == 1) {  // (one lane: the permutation is the identity)
      std::memcpy(dst, src, K * sizeof(float));
      std::fill(dst + K, dst + kp, 0.0f);
      continue;
    }
    size_t k = 0;
#if HWY_TARGET != HWY_SCALAR  // (no ConcatEven there)
    const size_t S = 2 * L;
    for (; k + S <= K; k += S) {
      const VF a = hn::LoadU(df, src + k), b = hn::LoadU(df, src + k + L);
      hn::StoreU(hn::ConcatEven(df, b, a), df, dst + k);
      hn::StoreU(hn::ConcatOdd(df, b, a), df, dst + k + L);
    }
#endif
    if (k < K) {
      for (size_t i = 0; i < L; ++i) {
        dst[k + i] = k + 2 * i < K ? src[k + 2 * i] : 0.0f;
        dst[k + L + i] = k + 2 * i + 1 < K ? src[k + 2 * i + 1] : 0.0f;
      }
    }
  }
}

template <DType kDT>
void MatMulTyped(const float* xs, size_t kp, size_t M, const MatrixView& w, float* y, size_t ldy, ThreadPool& pool) {
  const size_t N = size_t(w.rows), K = size_t(w.cols);
  const size_t S = 2 * hn::Lanes(DF());
  constexpr size_t kBytes = WRow<kDT>::kBytes;
  // Decode streams W from memory; larger M reuses each chunk of W from L2.
  const bool streaming = M <= size_t(kMaxMR);
  // KC: x rows of a block (kMaxMR * KC floats) stay in L1 next to NR rows of W.
  constexpr size_t kKcElements = 1024;
  const size_t kc = streaming ? K : std::min(K, kKcElements / S * S);
  // NC: a chunk of W (NC * KC elements) fills about a quarter of L2 ...
  constexpr size_t kChunkBytes = 256 * 1024, kRowQuantum = 24;  // 24: a multiple of every NR
  size_t nc = std::max(kRowQuantum, kChunkBytes / (kc * kBytes) / kRowQuantum * kRowQuantum);
  // ... but there are at least ~4 chunks per thread for balance (~8 when
  // streaming: the last chunk is read by one thread alone, at less than the
  // machine's bandwidth).
  const size_t chunks_per_thread = streaming ? 8 : 4;
  const size_t per_thread = (N + chunks_per_thread * pool.size() - 1) / (chunks_per_thread * pool.size());
  nc = std::min(nc, std::max(kRowQuantum, (per_thread + kRowQuantum - 1) / kRowQuantum * kRowQuantum));
  const size_t num_chunks = (N + nc - 1) / nc;
  const size_t num_blocks = (M + kMaxMR - 1) / kMaxMR;  // row blocks of balanced size <= kMaxMR

  pool.Run(num_chunks, [&](size_t chunk, size_t) {
    const size_t n0 = chunk * nc, n1 = std::min(N, n0 + nc);
    for (size_t k0 = 0; k0 < K; k0 += kc) {
      const size_t k1 = std::min(K, k0 + kc);
      for (size_t b = 0; b < num_blocks; ++b) {
        const size_t m0 = b * M / num_blocks, m1 = (b + 1) * M / num_blocks;
        RowBlockFor<kDT>(m1 - m0, xs + m0 * kp, kp, w, n0, n1, k0, k1, y + m0 * ldy, ldy, k0 > 0, streaming);
      }
    }
  });
}

}  // namespace

void MatMulImpl(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  if (M <= 0 || w.rows <= 0) return;
  const size_t K = size_t(w.cols);
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m) std::fill(y + m * ldy, y + m * ldy + w.rows, 0.0f);
    return;
  }
  if (w.dtype != DType::kBF16 && w.dtype != DType::kF16 && w.dtype != DType::kF32) {
    // Outside the contract of ops.h; the reference handles more formats (slowly).
    ref::MatMul(x, M, ldx, w, y, ldy);
    return;
  }
  const size_t S = 2 * hn::Lanes(DF());
  const size_t kp = (K + S - 1) / S * S;
  float* xs = ThreadScratch(ScratchSlot::kMatMulX, size_t(M) * kp);
  const bool interleave = InterleavedX(w.dtype);
  if (size_t(M) * K >= (size_t(1) << 16)) {
    pool.ParallelFor(size_t(M), 1,
                     [&](size_t b, size_t e, size_t) { PrepareRows(x, size_t(ldx), b, e, K, kp, interleave, xs); });
  } else {
    PrepareRows(x, size_t(ldx), 0, size_t(M), K, kp, interleave, xs);
  }
  switch (w.dtype) {
    case DType::kBF16:
      return MatMulTyped<DType::kBF16>(xs, kp, size_t(M), w, y, size_t(ldy), pool);
    case DType::kF16:
      return MatMulTyped<DType::kF16>(xs, kp, size_t(M), w, y, size_t(ldy), pool);
    default:
      return MatMulTyped<DType::kF32>(xs, kp, size_t(M), w, y, size_t(ldy), pool);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(MatMulImpl);

void MatMulGemv(const float* x, int64_t M, int64_t ldx, const MatrixView& w, float* y, int64_t ldy, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(MatMulImpl)(x, M, ldx, w, y, ldy, pool);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
