// PagedAttention (ops.h): splits the jobs into tasks, runs them on the pool
// (largest first, so long causal blocks do not finish last), and merges the
// partial results of decode ranges.
//
// * Decode (a job with at most kDecodeMaxQueries queries): a task is one
//   query over a range of key positions, all heads. A long context is split
//   into ranges when there are too few queries to keep the threads busy
//   (split-K, as flash-decoding does); the ranges' softmax partials are merged
//   exactly afterwards.
// * Prefill (more queries): a task is one (kv head, block of queries) with
//   about kPrefillRows rows of Q (queries x query heads per kv head). A job
//   the BF16-activation mode takes (ops.h) is always a prefill job: with
//   TERN_BF16_MIN_ROWS below 3 (the reference tests) decode jobs are too.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/attention_internal.h"
#include "kernels/cpu_features.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/scratch.h"
#include "kernels/simd_target.h"

namespace tern::kernels {
namespace {

constexpr int64_t kDecodeMaxQueries = 2;
constexpr int64_t kPrefillRows = 96;
// Decode ranges, in whole chunks of the kernel (attention_decode_hwy.cc's
// kDecodeChunk, 16, divides the quantum): up to one a thread of at least
// kMinSplitRange positions, more only of kMinRange. A query under 2 *
// kMinRange keys was one task before, so one core read its whole cache
// while the others waited: BM_AttentionDecode 1 x 128 / 1 x 256 (BF16 cache,
// 2 threads, AMD Zen 4, medians of 5, two rounds) 34.6 / 68.6-69.3 us ->
// 20.1-20.2 / 39.4-39.5. Ranges of 64 past that (8 for 1 x 512, the ~4 a
// thread asked for) merged more partials than they saved: 72.4-75.4 us
// against 78.3-79.3.
constexpr int64_t kMinRange = 256, kMinSplitRange = 64, kRangeQuantum = 64;

struct Task {
  uint32_t job;
  int32_t kv_head;  // prefill
  int64_t t0, t1;   // queries [t0, t1); decode: t1 = t0 + 1
  int64_t p0, p1;   // decode: key positions
  size_t partial;   // decode: offset of its partials, in floats
  bool decode;
  double cost;  // multiply-adds
};

// The ranges of one decode query: tasks [first, first + count).
struct DecodeQuery {
  uint32_t job;
  int64_t t;
  size_t first, count;
};

void MergePartials(const float* partials, const Task* tasks, size_t count, int64_t q_heads, int64_t head_dim,
                   float* out) {
  const size_t stride = AttentionPartialStride(head_dim);
  for (int64_t h = 0; h < q_heads; ++h) {
    float m = -INFINITY;
    for (size_t r = 0; r < count; ++r) m = std::max(m, partials[tasks[r].partial + size_t(h) * stride + stride - 2]);
    float l = 0;
    float* o = out + h * head_dim;
    std::fill(o, o + head_dim, 0.0f);
    for (size_t r = 0; r < count; ++r) {
      const float* part = partials + tasks[r].partial + size_t(h) * stride;
      const float w = std::exp(part[stride - 2] - m);
      l += w * part[stride - 1];
      for (int64_t d = 0; d < head_dim; ++d) o[d] += w * part[d];
    }
    const float inv = l > 0 ? 1.0f / l : 0.0f;  // l = 0: no keys at all (outside the contract)
    for (int64_t d = 0; d < head_dim; ++d) o[d] *= inv;
  }
}

}  // namespace

// kBf16DotMinAttentionQueries (cpu_features.h), or TERN_BF16_MIN_ROWS when
// set (then a job of fewer queries than the decode kernel's limit takes the
// prefill kernel: the reference tests set 1 so that every attention rounds).
// 0: the mode is off (another path, f32 activations, not Highway's AVX3 target).
int64_t AttentionBf16MinQueries() {
  if (!UseBf16Dot() || std::strcmp(SimdTargetName(), "AVX3") != 0) return 0;
  const int64_t o = Bf16MinRowsOverride();
  return o > 0 ? o : kBf16DotMinAttentionQueries;
}

void PagedAttention(std::span<const AttentionJob> jobs, int64_t q_heads, float scale, ThreadPool& pool,
                    bool bf16_ok) {
  // Reused across calls (no allocation per decode step); the caller's, not the workers'.
  thread_local std::vector<Task> tasks;
  thread_local std::vector<DecodeQuery> queries;
  tasks.clear();
  queries.clear();

  const int64_t bf16_min = bf16_ok ? AttentionBf16MinQueries() : 0;
  const auto bf16 = [&](const AttentionJob& job) {
    return bf16_min > 0 && job.num_queries >= bf16_min && job.kv.dtype != DType::kF8E4M3;
  };
  const auto decode = [&](const AttentionJob& job) { return job.num_queries <= kDecodeMaxQueries && !bf16(job); };
  int64_t decode_queries = 0;
  for (const AttentionJob& job : jobs)
    if (job.num_queries > 0 && decode(job)) decode_queries += job.num_queries;
  // Ranges per decode query: enough tasks for ~4 per thread overall.
  const int64_t want_ranges =
      decode_queries > 0 ? std::max<int64_t>(1, (4 * int64_t(pool.size()) + decode_queries - 1) / decode_queries) : 1;

  size_t partial_floats = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const AttentionJob& job = jobs[j];
    if (job.num_queries <= 0) continue;
    if (job.kv.dtype != DType::kF32 && job.kv.dtype != DType::kBF16 && job.kv.dtype != DType::kF16 &&
        job.kv.dtype != DType::kF8E4M3) {
      ref::PagedAttention(jobs.subspan(j, 1), q_heads, scale);  // outside the contract: slow but right
      continue;
    }
    const int64_t D = job.kv.head_dim;
    if (decode(job)) {
      const size_t per_task = size_t(q_heads) * AttentionPartialStride(D);
      for (int64_t t = 0; t < job.num_queries; ++t) {
        const int64_t keys = std::max<int64_t>(0, job.ctx_len - job.num_queries + t + 1);
        const int64_t most = std::max(std::min(int64_t(pool.size()), keys / kMinSplitRange), keys / kMinRange);
        const int64_t ranges = std::clamp<int64_t>(want_ranges, 1, std::max<int64_t>(1, most));
        const int64_t len = ((keys + ranges - 1) / ranges + kRangeQuantum - 1) / kRangeQuantum * kRangeQuantum;
        queries.push_back({uint32_t(j), t, tasks.size(), 0});
        for (int64_t p0 = 0; p0 < keys || p0 == 0; p0 += std::max<int64_t>(len, 1)) {
          const int64_t p1 = std::min(keys, p0 + len);
          tasks.push_back({.job = uint32_t(j),
                           .kv_head = 0,
                           .t0 = t,
                           .t1 = t + 1,
                           .p0 = p0,
                           .p1 = p1,
                           .partial = partial_floats,
                           .decode = true,
                           .cost = double(p1 - p0) * double(q_heads) * double(D) * 2});
          partial_floats += per_task;
          ++queries.back().count;
          if (p1 >= keys) break;
        }
      }
    } else {
      const int64_t group = q_heads / job.kv.kv_heads;
      const int64_t block = std::max<int64_t>(1, kPrefillRows / group);
      for (int64_t t0 = 0; t0 < job.num_queries; t0 += block) {
        const int64_t t1 = std::min(job.num_queries, t0 + block);
        const double keys = double(std::max<int64_t>(1, job.ctx_len - job.num_queries + t1));
        for (int32_t h = 0; h < job.kv.kv_heads; ++h)
          tasks.push_back({.job = uint32_t(j),
                           .kv_head = h,
                           .t0 = t0,
                           .t1 = t1,
                           .p0 = 0,
                           .p1 = 0,
                           .partial = 0,
                           .decode = false,
                           .cost = double(t1 - t0) * double(group) * keys * double(D) * 2});
      }
    }
  }
  if (tasks.empty()) return;

  float* partials = partial_floats > 0 ? ThreadScratch(ScratchSlot::kAttentionPartials, partial_floats) : nullptr;
  // Run the largest first, through an index (the decode queries refer to task positions).
  thread_local std::vector<uint32_t> order;
  order.resize(tasks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = uint32_t(i);
  const std::vector<Task>& all = tasks;
  // (std::sort with the index as tie-break is the stable order, without the
  // temporary buffer std::stable_sort allocates on every call.)
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return all[a].cost > all[b].cost || (all[a].cost == all[b].cost && a < b);
  });
  const std::vector<uint32_t>& run_order = order;
  pool.Run(all.size(), [&](size_t i, size_t) {
    const Task& t = all[run_order[i]];
    const AttentionJob& job = jobs[t.job];
    if (t.decode) {
      AttentionDecodeRange(job, t.t0, t.p0, t.p1, q_heads, scale, partials + t.partial);
    } else {
      AttentionPrefillTask(job, t.t0, t.t1, t.kv_head, q_heads, scale, bf16(job));
    }
  });
  for (const DecodeQuery& dq : queries) {
    const AttentionJob& job = jobs[dq.job];
    MergePartials(partials, all.data() + dq.first, dq.count, q_heads, job.kv.head_dim,
                  job.out + dq.t * q_heads * job.kv.head_dim);
  }
  // FP8 caches hold v / v_scale: the kernels accumulate the stored values.
  for (const AttentionJob& job : jobs)
    if (job.kv.dtype == DType::kF8E4M3 && job.num_queries > 0 && job.kv.v_scale != 1.0f) {
      const int64_t n = job.num_queries * q_heads * job.kv.head_dim;
      for (int64_t i = 0; i < n; ++i) job.out[i] *= job.kv.v_scale;
    }
}

}  // namespace tern::kernels
