// Model: the interface the engine drives. One forward call processes a batch
// of sequence chunks (prefill chunks and single decode tokens mixed), so the
// weights are read once per step for the whole batch.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/linear.h"

namespace tern {

// One sequence's part of a forward batch.
struct SequenceChunk {
  std::span<const int32_t> tokens;       // [n] new tokens of this sequence
  int64_t start_pos = 0;                 // tokens of the sequence already in the cache
  std::span<const int32_t> block_table;  // KV blocks covering positions [0, start_pos + n)
  int32_t state_slot = -1;               // recurrent-state slot (hybrid models); unused by Qwen3
  // Per-token recurrent-state checkpoints (a speculative verify chunk on a
  // hybrid model): slot j receives the whole recurrent state as it stands after
  // chunk token n - 1 - size + j, i.e. with the last size - j tokens not yet
  // absorbed. Empty: none. size < n; distinct from state_slot.
  std::span<const int32_t> step_state_slots;
  bool all_logits = false;               // logits for every new token, else only for the last
  bool skip_logits = false;              // no logits at all (a prefill chunk that does not end the prompt)
};

// What loading does about weights that hold NaN or Inf (model/weight_check.h).
enum class WeightCheck { kSkip, kWarn, kError };

struct LoadOptions {
  size_t threads = 0;  // 0: all cores
  ActivationNumerics numerics = ActivationNumerics::kFull;  // for quantized layers
  WeightCheck weight_check = WeightCheck::kWarn;  // kWarn: a warning on stderr naming each tensor
  // Tensor / expert parallelism across the ranks of an mpirun job
  // (model/shard.h). Under mpirun every rank calls LoadModel: rank 0 gets a
  // model whose Forward drives every rank (model/lockstep.h), the others
  // their part, to pass to RunWorker. Every rank fails when any does.
  int tp = 1;
  int ep = 1;
  // Print the load's phases on stderr (`tern serve`): a progress line every
  // few seconds of a long phase (bytes, ETA) and each phase's time at the end.
  bool report_progress = false;
  // Hold the weights in huge pages (TensorMemory::kHugePageCopy: a copy in
  // anonymous memory) instead of mapping the files; one process only (under
  // mpirun a rank copies out its slices from the mapped files).
  bool huge_pages = false;
  // Positions the model accepts: 0 or at most the config's max_position_embeddings
  // keeps that limit; larger raises it (a context longer than the model was
  // trained for, which `tern serve` allows only where the user asks, as SGLang
  // does with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN).
  int64_t max_positions = 0;
};

// lm_head's rows for a token map (Model::MakeDraftHead): head [ids.size(),
// hidden_size] in lm_head's format, owning its memory.
struct DraftHead {
  std::vector<int32_t> ids;
  Linear head;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  virtual CacheSpec cache_spec() const = 0;
  // The positions a sequence may reach: Forward refuses a chunk ending past it.
  // 0: no limit. The config's max_position_embeddings unless LoadOptions::max_positions raised it.
  virtual int64_t max_positions() const { return config().max_position_embeddings; }

  // Runs the batch, writing the new tokens' keys/values into `cache`.
  // logits: resized to [rows, vocab] f32, rows = sum over chunks of (skip_logits ? 0 : all_logits ? n : 1),
  // in batch order. The whole batch is checked (CheckBatch) before anything is
  // computed: an error (token id out of range, block table too short) means
  // nothing was written, neither KV nor recurrent state, and the model stays usable.
  virtual Status Forward(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits) = 0;
  // The checks Forward makes before computing, alone: lets the engine find
  // which sequences of a refused batch are at fault, so only those fail.
  virtual Status CheckBatch(std::span<const SequenceChunk> batch, const KvCache& cache) const = 0;

  // Bytes of weights read to decode one token of one sequence (for `tern bench`).
  virtual int64_t WeightBytesPerToken() const = 0;
  // Floating-point operations of one prompt token's matrix products at a mean
  // attention context of `context` keys (for `tern bench`'s share of the compute
  // peak): 2 per multiply-add of every active Linear except lm_head (a prompt
  // chunk computes one row of logits), MoE experts counted top_k / num_experts,
  // plus QK^T and PV of each full-attention layer. 0 when unknown.
  virtual double PrefillFlopsPerToken(double context) const {
    (void)context;
    return 0;
  }
  // Total bytes of weights held.
  virtual int64_t WeightBytes() const = 0;
  // The dtype of the unquantized weights (the embedding's): F32, BF16 or F16.
  virtual DType weight_dtype() const = 0;

  virtual ThreadPool& pool() = 0;

  // Multi-token prediction (the `mtp.*` head of Qwen3.5 / Qwen3-Next; see mtp.h).
  // 0 when the model has no head.
  virtual int64_t mtp_num_layers() const { return 0; }
  // cache_spec() plus the MTP layers' KV-cache slots (after the main attention
  // layers, one each). Only a cache made from this can run MtpForward; serving,
  // which drafts nothing yet, does not reserve them.
  CacheSpec cache_spec_with_mtp() const {
    CacheSpec s = cache_spec();
    s.attention_layers += mtp_num_layers();
    return s;
  }
  // Forward, and hidden: resized to [T, hidden_size] f32, T = every new token of
  // the batch in batch order (whatever all_logits / skip_logits say), each row the
  // final-normed hidden state that lm_head reads -- the MTP head's h_main.
  virtual Status ForwardWithHidden(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits,
                                   std::vector<float>& hidden) {
    (void)batch, (void)cache, (void)logits, (void)hidden;
    return Status::Error("this model does not expose its hidden states");
  }
  // The MTP head over rows of main-model hidden states. For chunk i, row t is
  // position p = start_pos + t: tokens[t] is t_{p+1}, the token after position p,
  // and hidden row (row_begin + t) is h_p from ForwardWithHidden. Writes the MTP
  // layer's keys/values at p (block_table must cover p + 1 positions; state_slot
  // is unused); logits as Forward's (rows per all_logits / skip_logits), each
  // predicting t_{p+2}. step selects the MTP layer (step % mtp_num_layers()).
  // last_hidden, when given: resized to [chunks, hidden_size], chunk i's last
  // row after the head's final norm (what its lm_head read): the h a chained
  // head step takes at the next position. draft, when given (MakeDraftHead):
  // the logits rows are over its ids only, [rows, draft->ids.size()].
  virtual Status MtpForward(std::span<const SequenceChunk> batch, std::span<const float> hidden, KvCache& cache,
                            std::vector<float>& logits, int64_t step = 0, std::vector<float>* last_hidden = nullptr,
                            const DraftHead* draft = nullptr) {
    (void)batch, (void)hidden, (void)cache, (void)logits, (void)step, (void)last_hidden, (void)draft;
    return Status::Error("this model has no multi-token-prediction (MTP) head");
  }

  // NEXTN's draft vocabulary (SpeculativeOptions::token_map): lm_head's rows
  // of `ids` (distinct, in [0, vocab_size)), copied in lm_head's own format,
  // for MtpForward to compute the head's logits over those ids only. The
  // caller owns it (an engine, for its lifetime): the model keeps nothing.
  virtual Result<std::shared_ptr<const DraftHead>> MakeDraftHead(std::span<const int32_t> ids) const {
    (void)ids;
    return Status::Error("this model has no multi-token-prediction (MTP) head to draft with");
  }

  // Whether this process's KvCache holds the whole recurrent state of a
  // sequence, so the engine may copy it (state snapshots of the hybrid prefix
  // cache). False under tensor/expert parallelism, where every rank holds its part.
  virtual bool state_is_local() const { return true; }

  // Whether every attention layer has FP8 KV-cache scales (k_scale, v_scale)
  // in the checkpoint; an FP8 cache uses 1.0 where they are missing.
  virtual bool HasKvCacheScales() const { return false; }
};

// Loads the model in `dir` (config.json + safetensors), dispatching on model_type.
Result<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& opts);

}  // namespace tern
