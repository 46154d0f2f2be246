// MtpTap: runs a model's multi-token-prediction head alongside generation, as
// a speculative decoder's drafter would (vLLM's EagleProposer): the main
// model's hidden state at position p goes through the head once t_{p+1}, the
// token after p, is known -- at once for the rows inside a prompt chunk; for
// the last row of a chunk when the next chunk or the sampled token arrives
// (OnToken). Used by `tern generate --mtp-logits-out`; it drafts nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace tern::app {

class MtpTap final : public Model {
 public:
  // record_from: the first position whose head logits are kept (generate: the
  // last prompt position, so that row i goes with the i-th generated token).
  MtpTap(Model& inner, int64_t record_from) : inner_(inner), record_from_(record_from) {}

  // One sequence per batch: the main model (its logits unchanged), then the head
  // over the rows whose next token is known.
  Status Forward(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits) override;
  Status CheckBatch(std::span<const SequenceChunk> batch, const KvCache& cache) const override {
    return inner_.CheckBatch(batch, cache);
  }
  // The token sampled from the last Forward's logits: the head runs the pending
  // last row (position p, token t_{p+1}); its logits predict t_{p+2}.
  Status OnToken(int32_t token);
  // The kept head logits, [rows, vocab]: with generate, row i was computed from
  // the hidden state that chose generated token i and that token, and predicts
  // generated token i + 1.
  const std::vector<float>& logits() const { return kept_; }

  const ModelConfig& config() const override { return inner_.config(); }
  // With the head's KV-cache slots: the tap runs it.
  CacheSpec cache_spec() const override { return inner_.cache_spec_with_mtp(); }
  int64_t WeightBytesPerToken() const override { return inner_.WeightBytesPerToken(); }
  int64_t WeightBytes() const override { return inner_.WeightBytes(); }
  DType weight_dtype() const override { return inner_.weight_dtype(); }
  ThreadPool& pool() override { return inner_.pool(); }
  bool HasKvCacheScales() const override { return inner_.HasKvCacheScales(); }
  int64_t mtp_num_layers() const override { return inner_.mtp_num_layers(); }

 private:
  // The head over rows_ (hidden) / tokens_ at positions first, first + 1, ...
  Status RunHead(int64_t first);

  Model& inner_;
  int64_t record_from_;
  KvCache* cache_ = nullptr;
  std::vector<int32_t> block_table_;  // of the last Forward
  std::vector<float> hidden_;         // [rows, H] of the last Forward
  std::vector<float> pending_;        // [H]: h at pending_pos_, waiting for its next token
  int64_t pending_pos_ = -1;          // -1: none
  std::vector<float> rows_;           // [k, H] the head's input rows
  std::vector<int32_t> tokens_;       // [k]
  std::vector<float> head_logits_, kept_;
};

}  // namespace tern::app
