// Helpers shared by the engine tests: the tiny Qwen3-MoE they run on, one
// request run alone in an engine of its own, and a stream drained to its end.
#pragma once

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "model/synth_checkpoint.h"

namespace tern::testing {

// A 2-layer Qwen3-MoE with random F32 weights (vocab 96, 256 positions) in dir.
inline void WriteTinyMoe(const std::string& dir) {
  std::filesystem::remove_all(dir);
  SynthPreset p{.name = "t", .arch = "qwen3_moe", .hidden = 32, .layers = 2, .heads = 4, .kv_heads = 2,
                .head_dim = 8, .ffn = 48, .vocab = 96, .tied = false, .experts = 4, .experts_per_tok = 2,
                .moe_ffn = 16, .max_positions = 256};
  ASSERT_TRUE(WriteSyntheticWeights(dir, {.preset = p, .vocab = 96, .dtype = DType::kF32, .seed = 3,
                                          .bos_token_id = 1, .eos_token_id = 2}).ok());
}

// A 4-layer Qwen3.5-MoE (Gated DeltaNet, full attention, GDN, full attention;
// a shared expert; random F32 weights, vocab 96, 256 positions) in dir: the
// hybrid model, whose sequences also carry recurrent state.
inline void WriteTinyHybrid(const std::string& dir, int64_t mtp_layers) {
  std::filesystem::remove_all(dir);
  SynthPreset p{.name = "h", .arch = "qwen3_5_moe", .hidden = 32, .layers = 4, .heads = 4, .kv_heads = 2,
                .head_dim = 8, .ffn = 0, .vocab = 96, .tied = false, .experts = 4, .experts_per_tok = 2,
                .moe_ffn = 16, .max_positions = 256, .linear_key_heads = 2, .linear_value_heads = 2,
                .linear_key_dim = 8, .linear_value_dim = 8, .conv_kernel = 4, .shared_ffn = 16, .interval = 2,
                .partial_rotary = 0.5, .mtp_layers = mtp_layers};
  ASSERT_TRUE(WriteSyntheticWeights(dir, {.preset = p, .vocab = 96, .dtype = DType::kF32, .seed = 5,
                                          .bos_token_id = 1, .eos_token_id = 2}).ok());
}
inline void WriteTinyHybrid(const std::string& dir) { WriteTinyHybrid(dir, 0); }
// The tiny hybrid with a one-layer MTP head (NEXTN drafting).
inline void WriteTinyHybridMtp(const std::string& dir) { WriteTinyHybrid(dir, 1); }

// Greedy tokens of one request run alone, in an engine of its own (no other
// engine may run `m` at the same time).
inline std::vector<int32_t> Alone(Model& m, const std::vector<int32_t>& prompt, int64_t n) {
  EngineRequest r{.id = "alone", .prompt = prompt, .max_tokens = n};
  r.sampling.temperature = 0;
  const EngineOptions o =
      OfflineEngineOptions(m, {r}, {.kv = {.block_size = 4, .dtype = DType::kF32}, .enable_prefix_cache = false});
  auto engine = Engine::Create(m, o);
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  if (!engine.ok()) return {};
  auto res = RunToCompletion(**engine, {r});
  EXPECT_TRUE(res.ok()) << res.status().message();
  return res.ok() ? (*res)[0].ids() : std::vector<int32_t>{};
}

// Tokens, logprobs (each token's, then its top ones) and the final update of one request.
struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  RequestUpdate last;
};
inline Outcome DrainOutcome(RequestStream& s) {
  Outcome o;
  RequestUpdate u;
  for (int guard = 0; guard < 10000; ++guard) {
    if (!s.Next(u, std::chrono::milliseconds(5000))) break;
    for (auto& t : u.tokens) {
      o.tokens.push_back(t.id);
      o.logprobs.push_back(t.logprob);
      for (auto& [id, lp] : t.top) o.logprobs.push_back(lp);
    }
    if (u.finished) break;
  }
  o.last = u;
  return o;
}

// A greedy request with the chosen token's logprob and the top 2.
inline EngineRequest GreedyRequest(std::string id, std::vector<int32_t> prompt, int64_t n) {
  EngineRequest r{.id = std::move(id), .prompt = std::move(prompt), .max_tokens = n, .top_logprobs = 2};
  r.sampling.temperature = 0;
  return r;
}

// Waits (up to 2.5 s) for an engine gauge to reach `want`.
inline void WaitFor(const std::atomic<int64_t>& v, int64_t want) {
  for (int i = 0; i < 500 && v.load() != want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// Logprobs equal within `tol` (0: bit for bit).
inline void ExpectLogprobs(const std::vector<float>& a, const std::vector<float>& b, float tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    if (tol == 0) EXPECT_EQ(a[i], b[i]) << what << " at " << i;
    else EXPECT_NEAR(a[i], b[i], tol) << what << " at " << i;
  }
}

// The ids a stream produces until it finishes; *last gets the final update.
inline std::vector<int32_t> Collect(RequestStream& s, RequestUpdate* last = nullptr) {
  std::vector<int32_t> out;
  RequestUpdate u;
  for (int guard = 0; guard < 10000; ++guard) {
    if (!s.Next(u, std::chrono::milliseconds(5000))) break;
    for (auto& t : u.tokens) out.push_back(t.id);
    if (u.finished) break;
  }
  if (last) *last = u;
  return out;
}

}  // namespace tern::testing
