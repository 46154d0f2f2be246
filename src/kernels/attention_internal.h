// The per-task attention kernels behind PagedAttention (attention.cc splits
// the jobs into tasks, runs them on the pool and merges partial results).
// Each runs on the calling thread, dispatched to the current SIMD target.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace tern::kernels {

// A partial decode result holds, per query head, `AttentionPartialStride`
// floats: acc[0, head_dim) = sum over the range's positions p of
// exp(s_p - m) * v_p, then m (the running max of the scores s_p) at
// [stride - 2] and l = sum exp(s_p - m) at [stride - 1]. Partials of disjoint
// ranges merge exactly: m = max m_r, out = sum_r exp(m_r - m) acc_r / sum_r exp(m_r - m) l_r.
inline size_t AttentionPartialStride(int64_t head_dim) { return size_t((head_dim + 15) / 16 * 16 + 16); }

// Query t of `job` against key positions [p0, p1) (within its causal range),
// all query heads; writes q_heads partials to `partial` (64-byte aligned)
// (attention_decode_hwy.cc). KV dtype F32, BF16 or F16.
void AttentionDecodeRange(const AttentionJob& job, int64_t t, int64_t p0, int64_t p1, int64_t q_heads, float scale,
                          float* partial);

// Queries [t0, t1) of `job`, the query heads of kv head `kv_head`, causal,
// blocked over keys like a GEMM; writes job.out (attention_prefill_hwy.cc).
// KV dtype F32, BF16, F16 or F8_E4M3. bf16: the BF16-activation mode's
// products (ops.h, AttentionBf16MinQueries) on Highway's AVX3 target, for
// F32, BF16 and F16 caches only (an FP8 cache, whose scales the products
// would have to carry, keeps f32); else f32.
void AttentionPrefillTask(const AttentionJob& job, int64_t t0, int64_t t1, int64_t kv_head, int64_t q_heads,
                          float scale, bool bf16);

}  // namespace tern::kernels
