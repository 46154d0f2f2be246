// Sampling the next token from logits, as OpenAI/SGLang/vLLM define the
// parameters: penalties first, then temperature, then top-k, top-p and min-p
// filtering, then a draw from the softmax. temperature == 0 means greedy.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
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
  double Uniform();  // [0, 1)

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> idx_;   // scratch
  std::vector<int32_t> count_;  // scratch: per-token output counts
};

// Index of the largest value (the lowest index among equal maxima).
int32_t ArgMax(std::span<const float> v);

}  // namespace tern
