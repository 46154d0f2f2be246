// DecoderModel: a pre-norm decoder-only transformer assembled from shared
// blocks. Each architecture file (qwen3.cc, qwen3_moe.cc, ...) only says which
// blocks each layer has and what its tensors are called.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "model/attention_block.h"
#include "model/ffn_block.h"
#include "model/gated_deltanet.h"
#include "model/model.h"

namespace tern {

struct DecoderLayer {
  std::vector<float> input_norm;      // [hidden]
  std::vector<float> post_attn_norm;  // [hidden]
  // The token mixer: linear attention when set, else `attention`.
  std::unique_ptr<GatedDeltaNet> linear_attn;
  AttentionBlock attention;
  std::variant<DenseFfn, MoeFfn> ffn;
};

class DecoderModel final : public Model {
 public:
  DecoderModel(ModelConfig cfg, TensorStore store, const LoadOptions& opts);

  // Architecture files fill these during loading.
  TensorStore& store() { return store_; }
  const TensorStore& store() const { return store_; }
  WeightLoader loader() const { return WeightLoader(store_, cfg_.quant, numerics_); }
  const TensorView* embed_tokens = nullptr;  // [vocab, hidden]
  std::vector<DecoderLayer> layers;
  std::vector<float> final_norm;  // [hidden]
  Linear lm_head;                 // [vocab, hidden]; may view embed_tokens when tied

  // Calls fn on every Linear layer (attention, MLP, experts, routers, lm_head).
  void ForEachLinear(const std::function<void(Linear&)>& fn);

  // Checks that every tensor in the files was used by the architecture.
  Status CheckAllTensorsUsed(const std::vector<std::string>& ignored_prefixes) const;

  const ModelConfig& config() const override { return cfg_; }
  // For architecture loaders that fill in defaults the config file left out.
  ModelConfig& mutable_config() { return cfg_; }
  CacheSpec cache_spec() const override;
  Status Forward(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits) override;
  int64_t WeightBytesPerToken() const override;
  int64_t WeightBytes() const override;
  DType weight_dtype() const override { return embed_tokens->dtype; }
  ThreadPool& pool() override { return pool_; }
  bool HasKvCacheScales() const override;

 private:
  Status Validate(std::span<const SequenceChunk> batch, const KvCache& cache) const;

  ModelConfig cfg_;
  TensorStore store_;
  ActivationNumerics numerics_;
  ThreadPool pool_;
  BatchLayout layout_;
  Scratch scratch_;
  std::vector<float> x_;  // residual stream [rows, hidden]
};

}  // namespace tern
