// Sampling the next token from logits, as OpenAI/SGLang/vLLM define the
// parameters, in SGLang's order (SamplingBatchInfo.apply_logits_bias):
// penalties, the min-tokens suppression, logit_bias; then temperature, top-k,
// top-p and min-p filtering and a draw from the softmax. temperature == 0
// means greedy (argmax of the biased, penalised logits).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tern {

struct SamplingParams {
  double temperature = 1.0;
  int64_t top_k = 0;       // 0 or -1: off
  double top_p = 1.0;      // 1: off
  double min_p = 0.0;      // 0: off
  double repetition_penalty = 1.0;  // HF/vLLM: divides positive logits, multiplies negative ones, for prompt and output tokens
  double presence_penalty = 0.0;    // OpenAI: subtracted once for every token present in the output
  double frequency_penalty = 0.0;   // OpenAI: subtracted per occurrence in the output
  std::optional<uint64_t> seed;
  // OpenAI logit_bias: (token id, bias) added to the logits; ids outside the vocabulary are ignored.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // vLLM min_tokens / SGLang min_new_tokens: while fewer than this many tokens
  // were generated, the tokens in `min_tokens_suppressed` (EOS and stop token
  // ids) get -inf, so generation cannot stop on them.
  int64_t min_new_tokens = 0;
  std::vector<int32_t> min_tokens_suppressed;

  Status Validate() const;
};

class Sampler {
 public:
  // Without a seed, draws from a random device.
  explicit Sampler(const SamplingParams& params);

  // logits: [vocab] (modified in place by penalties). prompt/output: tokens so far.
  int32_t Sample(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output);

  const SamplingParams& params() const { return params_; }

 private:
  void ApplyPenalties(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output);
  void ApplyBiases(std::span<float> logits, std::span<const int32_t> output) const;
  double Uniform();  // [0, 1)

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> idx_;   // scratch
  std::vector<int32_t> count_;  // scratch: per-token output counts
};

// Index of the largest value (the lowest index among equal maxima).
int32_t ArgMax(std::span<const float> v);

}  // namespace tern
