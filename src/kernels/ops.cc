// Dispatch of the kernels in ops.h that have no Highway version yet: each runs
// its scalar reference (threaded across jobs where the work is large).
#include "kernels/ops.h"

#include "kernels/reference.h"

namespace tern::kernels {

void KvWrite(const KvPages& kv, int64_t start, int64_t tokens, const float* k, const float* v) {
  ref::KvWrite(kv, start, tokens, k, v);
}
void PagedAttention(std::span<const AttentionJob> jobs, int64_t q_heads, float scale, ThreadPool& pool) {
  pool.Run(jobs.size(), [&](size_t j, size_t) { ref::PagedAttention(jobs.subspan(j, 1), q_heads, scale); });
}

}  // namespace tern::kernels
