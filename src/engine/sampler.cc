#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/ops.h"

namespace tern {

Status SamplingParams::Validate() const {
  if (!(temperature >= 0) || !std::isfinite(temperature)) return Status::Errorf("temperature must be >= 0, got {}", temperature);
  if (!(top_p > 0 && top_p <= 1)) return Status::Errorf("top_p must be in (0, 1], got {}", top_p);
  if (!(min_p >= 0 && min_p <= 1)) return Status::Errorf("min_p must be in [0, 1], got {}", min_p);
  if (top_k < -1) return Status::Errorf("top_k must be -1, 0 or positive, got {}", top_k);
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty))
    return Status::Errorf("repetition_penalty must be > 0, got {}", repetition_penalty);
  if (!(presence_penalty >= -2 && presence_penalty <= 2))
    return Status::Errorf("presence_penalty must be in [-2, 2], got {}", presence_penalty);
  if (!(frequency_penalty >= -2 && frequency_penalty <= 2))
    return Status::Errorf("frequency_penalty must be in [-2, 2], got {}", frequency_penalty);
  if (min_new_tokens < 0) return Status::Errorf("min_new_tokens must be >= 0, got {}", min_new_tokens);
  for (const auto& [id, bias] : logit_bias)
    if (!std::isfinite(bias)) return Status::Errorf("logit_bias for token {} must be finite, got {}", id, bias);
  return Status::Ok();
}

Sampler::Sampler(const SamplingParams& params) : params_(params) {
  if (params.seed) {
    rng_.seed(*params.seed);
  } else {
    std::random_device rd;
    rng_.seed((uint64_t(rd()) << 32) ^ rd());
  }
}

double Sampler::Uniform() { return double(rng_() >> 11) * (1.0 / 9007199254740992.0); }

int32_t ArgMax(std::span<const float> v) { return int32_t(kernels::ArgMax(v.data(), int64_t(v.size()))); }

void Sampler::ApplyPenalties(std::span<float> logits, std::span<const int32_t> prompt,
                             std::span<const int32_t> output) {
  const int32_t V = int32_t(logits.size());
  if (params_.repetition_penalty != 1.0) {
    const float p = float(params_.repetition_penalty);
    // Each distinct token once, whether it appears in the prompt or the output.
    idx_.clear();
    for (auto span : {prompt, output})
      for (int32_t t : span)
        if (t >= 0 && t < V) idx_.push_back(t);
    std::sort(idx_.begin(), idx_.end());
    idx_.erase(std::unique(idx_.begin(), idx_.end()), idx_.end());
    for (int32_t t : idx_) logits[size_t(t)] = logits[size_t(t)] > 0 ? logits[size_t(t)] / p : logits[size_t(t)] * p;
  }
  if (params_.presence_penalty != 0.0 || params_.frequency_penalty != 0.0) {
    count_.assign(size_t(V), 0);
    for (int32_t t : output)
      if (t >= 0 && t < V) count_[size_t(t)]++;
    for (int32_t t = 0; t < V; ++t)
      if (count_[size_t(t)] > 0)
        logits[size_t(t)] -= float(params_.frequency_penalty * count_[size_t(t)] + params_.presence_penalty);
  }
}

void Sampler::ApplyBiases(std::span<float> logits, std::span<const int32_t> output) const {
  const int64_t V = int64_t(logits.size());
  if (int64_t(output.size()) < params_.min_new_tokens)
    for (int32_t t : params_.min_tokens_suppressed)
      if (t >= 0 && t < V) logits[size_t(t)] = -INFINITY;
  for (const auto& [t, bias] : params_.logit_bias)
    if (t >= 0 && t < V) logits[size_t(t)] += bias;
}

int32_t Sampler::Sample(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output) {
  ApplyPenalties(logits, prompt, output);
  ApplyBiases(logits, output);
  if (params_.temperature == 0.0 || params_.top_k == 1) return ArgMax(logits);

  // Candidates sorted by logit, descending; top-k cuts the list.
  const size_t V = logits.size();
  idx_.resize(V);
  std::iota(idx_.begin(), idx_.end(), 0);
  size_t k = (params_.top_k > 0 && size_t(params_.top_k) < V) ? size_t(params_.top_k) : V;
  auto by_logit = [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b); };
  if (k < V) {
    std::partial_sort(idx_.begin(), idx_.begin() + std::ptrdiff_t(k), idx_.end(), by_logit);
    idx_.resize(k);
  } else {
    std::sort(idx_.begin(), idx_.end(), by_logit);
  }
  // Softmax of logits / temperature over the candidates.
  const double inv_t = 1.0 / params_.temperature;
  const double mx = logits[size_t(idx_[0])];
  std::vector<double> prob(idx_.size());
  double sum = 0;
  for (size_t i = 0; i < idx_.size(); ++i) sum += (prob[i] = std::exp((double(logits[size_t(idx_[i])]) - mx) * inv_t));
  for (auto& p : prob) p /= sum;
  // top-p: the smallest prefix whose mass reaches top_p (always at least one token).
  size_t keep = prob.size();
  if (params_.top_p < 1.0) {
    double cum = 0;
    for (size_t i = 0; i < prob.size(); ++i) {
      cum += prob[i];
      if (cum >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  // min-p: drop tokens whose probability is below min_p times the top one.
  if (params_.min_p > 0.0) {
    const double floor = params_.min_p * prob[0];
    size_t n = 1;
    while (n < keep && prob[n] >= floor) ++n;
    keep = n;
  }
  double mass = 0;
  for (size_t i = 0; i < keep; ++i) mass += prob[i];
  double u = Uniform() * mass;
  for (size_t i = 0; i < keep; ++i) {
    u -= prob[i];
    if (u < 0) return idx_[i];
  }
  return idx_[keep - 1];
}

}  // namespace tern
