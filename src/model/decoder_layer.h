// DecoderLayer: one pre-norm block of the decoder (a token mixer, then a
// feed-forward block, each with a residual), shared by the main layers and the
// MTP head's layers (mtp.h).
#pragma once

#include <functional>
#include <memory>
#include <variant>
#include <vector>

#include "dist/comm.h"
#include "model/attention_block.h"
#include "model/ffn_block.h"
#include "model/gated_deltanet.h"

namespace tern {

struct DecoderLayer {
  std::vector<float> input_norm;      // [hidden] (zero-centred norms already hold 1 + w)
  std::vector<float> post_attn_norm;  // [hidden]
  // The token mixer: linear attention when set, else `attention`.
  std::unique_ptr<GatedDeltaNet> linear_attn;
  AttentionBlock attention;
  std::variant<DenseFfn, MoeFfn> ffn;
  // Tensor / expert parallelism (model/shard.h): the ranks whose partial
  // mixer and FFN outputs sum to the layer's; null on one rank.
  dist::Comm* mixer_reduce = nullptr;
  dist::Comm* ffn_reduce = nullptr;

  // x: [batch.rows, hidden] residual stream, updated in place:
  //   x += mixer(rmsnorm(x; input_norm));  x += ffn(rmsnorm(x; post_attn_norm)).
  // Uses s.h and s.tmp as [rows, hidden] buffers (the blocks use the others).
  void Forward(const BatchLayout& batch, float* x, KvCache& cache, Scratch& s, ThreadPool& pool, float eps) const;

  // Calls fn on every Linear of the layer (mixer, MLP, experts, routers).
  void ForEachLinear(const std::function<void(Linear&)>& fn);
  // Bytes of weights read per decoded token (the router and top-k experts of a MoE).
  int64_t active_bytes() const;
};

}  // namespace tern
