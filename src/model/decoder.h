// DecoderModel: a pre-norm decoder-only transformer assembled from shared
// blocks. Each architecture file (qwen3.cc, qwen3_moe.cc, ...) only says which
// blocks each layer has and what its tensors are called.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/decoder_layer.h"
#include "model/model.h"
#include "model/mtp.h"

namespace tern {

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
  // The multi-token-prediction head (Qwen3.5 / Qwen3-Next), when the checkpoint
  // has one; its layers cache after the main attention layers.
  std::unique_ptr<MtpHead> mtp;
  // Tensor / expert parallelism (model/shard.h). Each rank of logits_group
  // holds vocabulary rows [rank * vocab_slice, ...) of lm_head and the group
  // gathers the logits on its rank 0; ranks with !computes_logits (other
  // tensor-parallel groups) compute none. kv_heads: this rank's KV heads.
  struct Sharding {
    dist::Comm* logits_group = nullptr;
    int64_t vocab_slice = 0;
    bool computes_logits = true;
    int64_t kv_heads = 0;        // 0: the config's
    int64_t weight_bytes = -1;   // bytes this rank holds (-1: every tensor of the checkpoint)
  };
  Sharding sharding;

  // Calls fn on every Linear layer of the main model (attention, MLP, experts,
  // routers, lm_head; not the MTP head's: mtp->ForEachLinear).
  void ForEachLinear(const std::function<void(Linear&)>& fn);

  // Checks that every tensor in the files was used by the architecture.
  Status CheckAllTensorsUsed(const std::vector<std::string>& ignored_prefixes) const;

  const ModelConfig& config() const override { return cfg_; }
  // For architecture loaders that fill in defaults the config file left out.
  ModelConfig& mutable_config() { return cfg_; }
  CacheSpec cache_spec() const override;
  int64_t max_positions() const override { return max_positions_; }
  Status Forward(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits) override;
  Status CheckBatch(std::span<const SequenceChunk> batch, const KvCache& cache) const override {
    return Validate(batch, cache, /*uses_state=*/true);
  }
  Status ForwardWithHidden(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits,
                           std::vector<float>& hidden) override;
  int64_t mtp_num_layers() const override { return mtp ? int64_t(mtp->layers.size()) : 0; }
  Status MtpForward(std::span<const SequenceChunk> batch, std::span<const float> hidden, KvCache& cache,
                    std::vector<float>& logits, int64_t step, std::vector<float>* last_hidden,
                    const DraftHead* draft) override;
  Result<std::shared_ptr<const DraftHead>> MakeDraftHead(std::span<const int32_t> ids) const override;
  int64_t WeightBytesPerToken() const override;
  double PrefillFlopsPerToken(double context) const override;
  int64_t WeightBytes() const override;
  DType weight_dtype() const override { return embed_tokens->dtype; }
  ThreadPool& pool() override { return pool_; }
  bool HasKvCacheScales() const override;

 private:
  // uses_state: the chunks' recurrent-state slots are read (not by the MTP head).
  Status Validate(std::span<const SequenceChunk> batch, const KvCache& cache, bool uses_state) const;
  Status ForwardImpl(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits,
                     std::vector<float>* hidden);
  // x: [layout_.rows, hidden] <- the embedding rows of the batch's tokens.
  void Embed(std::span<const SequenceChunk> batch, float* x) const;
  // The rows of x [layout_.rows, hidden] that need logits, normed with `norm`
  // unless already normed (norm == nullptr), through lm_head into logits.
  // head: lm_head (null), or a draft head's rows (no vocabulary parallelism).
  void Logits(std::span<const SequenceChunk> batch, const float* x, const float* norm, std::vector<float>& logits,
              const Linear* head = nullptr);

  ModelConfig cfg_;
  TensorStore store_;
  ActivationNumerics numerics_;
  int64_t max_positions_;  // 0: no limit
  ThreadPool pool_;
  BatchLayout layout_;
  Scratch scratch_;
  std::vector<float> x_;  // residual stream [rows, hidden]
  std::vector<float> embedded_;  // MtpForward: embedding rows [rows, hidden]
  std::vector<float> vocab_part_, vocab_all_;  // tensor parallel: [rows, vocab_slice], [tp, rows, vocab_slice]
};

}  // namespace tern
