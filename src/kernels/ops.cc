// Dispatch of the kernels in ops.h. Until the Highway versions land, each op
// runs its scalar reference (threaded where the work is large).
#include "kernels/ops.h"

#include "kernels/reference.h"

namespace tern::kernels {

void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) {
  ref::RmsNorm(x, weight, rows, dim, eps, out);
}
void RopeNeox(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim,
              const float* cos, const float* sin) {
  ref::RopeNeox(x, tokens, heads, head_dim, rotary_dim, cos, sin);
}
void SiluMul(const float* gate, const float* up, int64_t n, float* out) { ref::SiluMul(gate, up, n, out); }
void AddInPlace(float* a, const float* b, int64_t n) { ref::AddInPlace(a, b, n); }
void ConvertToF32(DType dtype, const void* src, int64_t n, float* out) { ref::ConvertToF32(dtype, src, n, out); }
void KvWrite(const KvPages& kv, int64_t start, int64_t tokens, const float* k, const float* v) {
  ref::KvWrite(kv, start, tokens, k, v);
}
void PagedAttention(std::span<const AttentionJob> jobs, int64_t q_heads, float scale, ThreadPool& pool) {
  pool.Run(jobs.size(), [&](size_t j, size_t) { ref::PagedAttention(jobs.subspan(j, 1), q_heads, scale); });
}

}  // namespace tern::kernels
