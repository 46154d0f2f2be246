#include "engine/generate.h"

#include <algorithm>
#include <chrono>

namespace tern {
namespace {
double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Releases a sequence's blocks on every exit path.
struct BlockLease {
  BlockAllocator& alloc;
  std::vector<int32_t> blocks;
  ~BlockLease() { alloc.ReleaseAll(blocks); }
};
}  // namespace

Result<GenerateResult> Generate(Model& model, KvCache& cache, BlockAllocator& allocator, const GenerateRequest& req,
                                const TokenCallback& on_token) {
  if (req.prompt.empty()) return Status::Error("the prompt is empty");
  TERN_RETURN_IF_ERROR(req.sampling.Validate());
  const ModelConfig& cfg = model.config();
  const int64_t total = int64_t(req.prompt.size()) + req.max_tokens;
  if (cfg.max_position_embeddings > 0 && int64_t(req.prompt.size()) > cfg.max_position_embeddings)
    return Status::Errorf("the prompt has {} tokens, more than the context length {}", req.prompt.size(),
                          cfg.max_position_embeddings);
  BlockLease lease{allocator, {}};
  if (!allocator.Allocate(BlocksFor(total, cache.block_size()), lease.blocks))
    return Status::Errorf("the KV cache cannot hold {} tokens ({} blocks free)", total, allocator.num_free());

  GenerateResult result;
  Sampler sampler(req.sampling);
  std::vector<float> logits;
  const int64_t V = cfg.vocab_size;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t chunk = std::max<int64_t>(1, req.prefill_chunk);
  int64_t pos = 0;
  while (pos < int64_t(req.prompt.size())) {
    const int64_t n = std::min<int64_t>(chunk, int64_t(req.prompt.size()) - pos);
    SequenceChunk c{.tokens = std::span<const int32_t>(req.prompt).subspan(size_t(pos), size_t(n)),
                    .start_pos = pos, .block_table = lease.blocks, .state_slot = 0,
                    .skip_logits = pos + n < int64_t(req.prompt.size())};
    TERN_RETURN_IF_ERROR(model.Forward({&c, 1}, cache, logits));
    pos += n;
  }
  const auto t1 = std::chrono::steady_clock::now();
  result.prefill_seconds = Seconds(t0, t1);
  result.finish_reason = "length";
  std::vector<float> raw;
  for (int64_t step = 0; step < req.max_tokens; ++step) {
    if (step > 0) {
      const int32_t last = result.tokens.back();
      SequenceChunk c{.tokens = {&last, 1}, .start_pos = pos, .block_table = lease.blocks, .state_slot = 0};
      TERN_RETURN_IF_ERROR(model.Forward({&c, 1}, cache, logits));
      ++pos;
    }
    raw.assign(logits.begin(), logits.begin() + V);
    const int32_t tok = sampler.Sample(std::span<float>(logits.data(), size_t(V)), req.prompt, result.tokens);
    result.tokens.push_back(tok);
    const bool keep_going = !on_token || on_token(tok, raw);
    if (std::find(req.stop_token_ids.begin(), req.stop_token_ids.end(), tok) != req.stop_token_ids.end() ||
        !keep_going) {
      result.finish_reason = "stop";
      break;
    }
    if (cfg.max_position_embeddings > 0 && pos + 1 >= cfg.max_position_embeddings) break;
  }
  result.decode_seconds = Seconds(t1, std::chrono::steady_clock::now());
  return result;
}

}  // namespace tern
