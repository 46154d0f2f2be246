// PagedAttention (ops.h): splits the jobs into tasks and runs them on the
// pool, largest first so the long causal blocks of a prefill do not finish
// last.
//
// * A job with at most kDecodeMaxQueries queries (a decode step) is one task
//   per kv head: AttentionDecodeTask.
// * A longer job is one task per (kv head, block of queries), with blocks of
//   about kPrefillRows rows of Q (queries x query heads per kv head):
//   AttentionPrefillTask.
#include <algorithm>
#include <vector>

#include "kernels/attention_internal.h"
#include "kernels/ops.h"
#include "kernels/reference.h"

namespace tern::kernels {
namespace {

constexpr int64_t kDecodeMaxQueries = 2;
constexpr int64_t kPrefillRows = 96;

struct Task {
  uint32_t job;
  int32_t kv_head;
  int64_t t0, t1;  // queries [t0, t1)
  bool decode;
  double cost;  // ~ multiply-adds
};

}  // namespace

void PagedAttention(std::span<const AttentionJob> jobs, int64_t q_heads, float scale, ThreadPool& pool) {
  thread_local std::vector<Task> tasks;  // reused across calls: no allocation per decode step
  tasks.clear();
  for (size_t j = 0; j < jobs.size(); ++j) {
    const AttentionJob& job = jobs[j];
    if (job.num_queries <= 0) continue;
    if (job.kv.dtype != DType::kF32 && job.kv.dtype != DType::kBF16 && job.kv.dtype != DType::kF16) {
      ref::PagedAttention(jobs.subspan(j, 1), q_heads, scale);  // outside the contract: slow but right
      continue;
    }
    const bool decode = job.num_queries <= kDecodeMaxQueries;
    const int64_t group = q_heads / job.kv.kv_heads;
    const int64_t block = decode ? job.num_queries : std::max<int64_t>(1, kPrefillRows / group);
    for (int64_t t0 = 0; t0 < job.num_queries; t0 += block) {
      const int64_t t1 = std::min(job.num_queries, t0 + block);
      const double keys = double(std::max<int64_t>(1, job.ctx_len - job.num_queries + t1));
      for (int32_t h = 0; h < job.kv.kv_heads; ++h)
        tasks.push_back({uint32_t(j), h, t0, t1, decode, double(t1 - t0) * keys});
    }
  }
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.cost > b.cost; });
  const std::vector<Task>& all = tasks;  // the caller's list (tasks is thread_local)
  pool.Run(all.size(), [&](size_t i, size_t) {
    const Task& t = all[i];
    if (t.decode) {
      AttentionDecodeTask(jobs[t.job], t.t0, t.t1, t.kv_head, q_heads, scale);
    } else {
      AttentionPrefillTask(jobs[t.job], t.t0, t.t1, t.kv_head, q_heads, scale);
    }
  });
}

}  // namespace tern::kernels
