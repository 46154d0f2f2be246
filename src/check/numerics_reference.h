// What the numerics suite compares a deployment with: a LogprobReference
// scores a token sequence teacher-forced. tern's own Engine implements it in
// the tern binary (app/numerics_reference.cc, --reference-model); another
// deployment over HTTP implements it here (numerics_client.h,
// --reference-url). This module never links the engine: the binary hands
// RegisterCheck a loader.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "check/numerics_compare.h"

namespace tern::check {

// One prompt of the suite: chat messages rendered with the model's template
// (thinking on or off), or raw text.
struct NumericsPrompt {
  std::string name;                               // row name: "chat", "thinking", ..., "file-3"
  nlohmann::json messages = nlohmann::json();     // array of messages; null: `text` is the prompt
  std::string text;                               // raw prompt (no template)
  bool thinking = false;                          // chat_template_kwargs enable_thinking / thinking
};

class LogprobReference {
 public:
  virtual ~LogprobReference() = default;
  // For the report: "tern engine, /models/x (w4a4 numerics)".
  virtual std::string Describe() const = 0;
  // The prompt's token ids, as a server renders and tokenizes it.
  virtual Result<std::vector<int32_t>> Tokenize(const NumericsPrompt& prompt) = 0;
  // Positions p in [first, tokens.size()) (first >= 1), ascending: the
  // distribution of tokens[p] given tokens[0, p), teacher-forced: token,
  // logprob, the top_k most likely and, in `extra`, the logprobs of the ids
  // in want[p - first] (a reference with the whole row gives them all;
  // another deployment only those in its own top-k).
  virtual Result<std::vector<PositionLogprobs>> Score(const std::vector<int32_t>& tokens, int64_t first, int top_k,
                                                      const std::vector<std::vector<int32_t>>& want) = 0;
  // BF16-rounded variants of this reference (0: it has none): the same
  // scoring with every GEMM input rounded to BF16 stochastically, variant v
  // under its own seed (kernels/ops.h SetStochasticBf16Seed). Each stands in
  // for a deployment that rounds activations to BF16 as a GPU or tern's BF16
  // CPU paths do; together they show how far such rounding alone moves each
  // position (--reference-numerics bf16: JudgeWithRoundedVariants).
  virtual int RoundedVariants() const { return 0; }
  virtual Result<std::vector<PositionLogprobs>> ScoreRounded(int variant, const std::vector<int32_t>& tokens,
                                                             int64_t first, int top_k,
                                                             const std::vector<std::vector<int32_t>>& want) {
    (void)variant, (void)tokens, (void)first, (void)top_k, (void)want;
    return Status::Error("this reference has no BF16-rounded variants");
  }
  // A token's text for messages ("" when unknown).
  virtual std::string TokenText(int32_t id) const {
    (void)id;
    return "";
  }
};

struct ReferenceModelSpec {
  std::string model_dir;
  // What the deployment computes, which sets the reference's numerics and
  // how it is judged: "auto" (ask the deployment; see RunNumerics), "full"
  // (f32 activations: a reference in f32, judged position by position),
  // "bf16" (activations rounded to BF16: the reference in f32 and its
  // BF16-rounded variants), "w4a4" (Blackwell's NVFP4 GEMM; w8a8 for FP8),
  // "w4a8" (tern's 8-bit activations: the reference quantizes them the same
  // way, with the deployment's KV cache dtype; judged position by position
  // by the f32 thresholds).
  std::string numerics = "auto";
  size_t threads = 0;             // 0: all cores
  // The reference's KV cache dtype (tern's --kv-cache-dtype names): "f32",
  // the most exact, except for a W4A8 deployment, whose own (from its
  // /get_server_info "kv_cache_dtype") the reference then mirrors: under
  // 8-bit steps, an F16 cache's roundings of K and V flip activations to the
  // next step, and on models/demo such flips moved a prompt position's top-1
  // by 6 nats against an F32-cache reference (by 2e-3 KL at most with both
  // caches F32). The same cache leaves only the order of f32 arithmetic.
  std::string kv_cache_dtype = "f32";
};

// Loads --reference-model (the tern binary's engine); errors with context.
using ReferenceLoader = std::function<Result<std::unique_ptr<LogprobReference>>(const ReferenceModelSpec&)>;

// `tern check --suite numerics` options.
struct NumericsOptions {
  ReferenceModelSpec reference;  // reference.model_dir empty: none
  std::string reference_url;     // another deployment as the reference
  std::string prompts_file;      // JSON lines or plain lines; empty: the built-in set
  int tokens = 128;              // greedy continuation per prompt
  int top_logprobs = 20;         // k of the deployment's top-k (OpenAI's and vLLM's maximum)
  // BF16 judging: how many of the reference's BF16-rounded variants score a
  // prompt that crosses the thresholds (at most kBf16RoundedVariants, whose
  // number the rule was measured with; fewer cost less on a large model and
  // see fewer of the near-ties a deployment may flip; 0: position by position).
  int rounded_references = kBf16RoundedVariants;
  NumericsThresholds thresholds;
  // The thresholds (with the same overrides) for a deployment that
  // --reference-numerics auto finds quantizing its activations (w4a4, w8a8).
  NumericsThresholds quantized_thresholds = W4A4Thresholds();
  ReferenceLoader loader;        // set by the tern binary; null in tern_check_driver
};

}  // namespace tern::check
