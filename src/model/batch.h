// BatchLayout: how a forward batch's sequences map onto activation rows, and
// the per-row rotary tables, computed once per forward and shared by all layers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/moe_routing.h"
#include "kernels/ops.h"
#include "model/model.h"

namespace tern {

struct BatchLayout {
  std::span<const SequenceChunk> seqs;
  std::vector<int64_t> row_begin;  // [seqs.size() + 1]: seq i owns rows [row_begin[i], row_begin[i+1])
  int64_t rows = 0;                // total new tokens
  std::vector<int32_t> positions;  // [rows]
  std::vector<float> rope_cos, rope_sin;  // [rows, rotary_dim / 2]
  int64_t rotary_dim = 0;

  // Fills everything from the chunks; rotary tables for NeoX RoPE with `theta`.
  void Build(std::span<const SequenceChunk> chunks, int64_t rotary_dim, double theta);
};

// Reusable activation buffers (grown, never shrunk, so steady-state decoding allocates nothing).
struct Scratch {
  std::vector<float> h, q, k, v, attn, tmp, tmp2, gate, up, act, router, moe_in, moe_out, shared, mtp_in;
  std::vector<kernels::AttentionJob> attention_jobs;  // one per sequence of the batch
  kernels::MoeRouting routing;                         // the MoE layers' token-to-expert tables
  std::vector<int32_t> local_experts;                  // expert parallel: the active experts this rank holds
  // MoE experts running one per thread: each thread's buffers and its inline
  // pool of one (so the expert's matmuls stay on that thread).
  std::vector<Scratch> per_thread;
  std::vector<std::unique_ptr<ThreadPool>> inline_pools;
  static float* Get(std::vector<float>& buf, int64_t n) {
    if (int64_t(buf.size()) < n) buf.resize(size_t(n));
    return buf.data();
  }
};

}  // namespace tern
