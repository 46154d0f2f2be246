#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tern {

TokenOutput MakeTokenOutput(int32_t id, std::span<const float> logits, int32_t top_k) {
  TokenOutput t;
  t.id = id;
  if (top_k < 0) return t;
  float mx = -INFINITY;
  for (float v : logits) mx = std::max(mx, v);
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v) - mx);
  const float lse = float(mx + std::log(sum));
  t.logprob = logits[size_t(id)] - lse;
  if (top_k > 0) {
    std::vector<int32_t> idx(logits.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
    const size_t k = std::min(size_t(top_k), idx.size());
    std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(), [&](int32_t a, int32_t b) {
      return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
    });
    for (size_t i = 0; i < k; ++i) t.top.emplace_back(idx[i], logits[size_t(idx[i])] - lse);
  }
  return t;
}

int32_t RankOf(std::span<const float> logits, int32_t id) {
  const float v = logits[size_t(id)];
  int32_t above = 0;
  for (float x : logits) above += x > v;
  return above + 1;
}

bool AllFinite(std::span<const float> row) {
  bool ok = true;
  for (float v : row) ok &= std::abs(v) <= std::numeric_limits<float>::max();  // false for NaN and +-Inf
  return ok;
}

}  // namespace tern
