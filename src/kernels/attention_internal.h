// The per-task attention kernels behind PagedAttention (attention.cc splits
// the jobs into tasks and runs them on the pool). Each runs on the calling
// thread, dispatched to the current SIMD target.
#pragma once

#include <cstdint>

#include "kernels/ops.h"

namespace tern::kernels {

// Queries [t0, t1) of `job` (at most a few: one per decode step), the query
// heads of kv head `kv_head`; reads each K/V row once for all of them
// (attention_decode_hwy.cc). KV dtype F32, BF16 or F16.
void AttentionDecodeTask(const AttentionJob& job, int64_t t0, int64_t t1, int64_t kv_head, int64_t q_heads,
                         float scale);

// The same for a block of many queries, blocked over keys like a GEMM
// (attention_prefill_hwy.cc). KV dtype F32, BF16 or F16.
void AttentionPrefillTask(const AttentionJob& job, int64_t t0, int64_t t1, int64_t kv_head, int64_t q_heads,
                          float scale);

}  // namespace tern::kernels
