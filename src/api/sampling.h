// Sampling parameters after defaults, and the generation-time checks SGLang
// runs in its tokenizer manager (SamplingParams.verify, context length).
// Failures are 400 "BadRequestError" with SGLang's exact messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/api_error.h"
#include "api/requests.h"

namespace tern::api {

// The model's generation_config.json values (SGLang --sampling-defaults
// model); SGLang applies them to chat requests only.
struct GenerationDefaults {
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
};

// What the engine samples with, as SGLang's SamplingParams holds it after
// __post_init__: temperature 0 (below 1e-6) becomes greedy, written as
// temperature 1.0 with top_k 1; top_k -1 means the whole vocabulary.
struct SamplingParams {
  std::optional<int64_t> max_new_tokens;  // nullopt: up to the context limit
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = -1;
  double min_p = 0.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  double repetition_penalty = 1.0;
  int64_t min_new_tokens = 0;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  bool no_stop_trim = false;
  std::optional<int64_t> seed;
  int64_t n = 1;
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id, bias
  std::optional<ConstraintRequest> constraint;        // structured output

  bool greedy() const { return top_k == 1; }
};

// Request values, then `defaults`, then 1.0/1.0/-1/0.0/1.0; checks ranges in
// SamplingParams.verify's order:
//   "temperature must be a non-negative finite number, got -1.0."
//   "top_p must be in (0, 1], got 0.0."
//   "min_p must be in [0, 1], got 2.0."
//   "top_k must be -1 (disable) or at least 1, got 0."
//   "frequency_penalty must be in [-2, 2], got 3.0."
//   "presence_penalty must be in [-2, 2], got 3.0."
//   "repetition_penalty must be in (0, 2] (1.0 = no penalty), got 0.0."
//   "min_new_tokens must be in [0, max_new_tokens], got -1."
//   "max_new_tokens must be at least 0, got -1."
//   "min_new_tokens must be in [0, max_new_tokens(4)], got 5."
//   "logit_bias must has keys in [0, 151935], got 200000."
//   "invalid literal for int() with base 10: 'abc'"
//   "stop has 300 strings; at most 256 are accepted." (and 64 KiB of them in
//   all; stop_token_ids at most 1024)
// logit_bias keys naming one id set it once (the last wins); biases are clamped
// to [-100, 100] (OpenAI's range; vLLM clamps likewise).
// `vocab_size` bounds logit_bias keys and stop_token_ids... (the latter are
// only checked to be >= 0, like SGLang).
ApiResult<SamplingParams> ResolveSampling(const SamplingRequest& request,
                                          const GenerationDefaults& defaults, int64_t vocab_size);

// SGLang's context checks (tokenizer_manager._validate_one_request):
//   input >= context: "The input (N tokens) is longer than the model's
//     context length (M tokens)."; with allow_auto_truncate the input is cut
//     to M tokens instead;
//   input + max_new_tokens > context: "Requested token count exceeds the
//     model's maximum context length of M tokens. You requested a total of T
//     tokens: N tokens from the input messages and K tokens for the
//     completion. Please reduce the number of tokens in the input messages or
//     the completion to fit within the limit."; with allow_auto_truncate
//     max_new_tokens is lowered to M - N instead.
struct ContextCheck {
  std::optional<ApiError> error;
  int64_t input_tokens = 0;               // to keep (less than given if truncated)
  std::optional<int64_t> max_new_tokens;  // possibly lowered
};
ContextCheck CheckContextLength(int64_t input_tokens, std::optional<int64_t> max_new_tokens,
                                int64_t context_length, bool allow_auto_truncate);

}  // namespace tern::api
