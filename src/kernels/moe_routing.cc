#include "kernels/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tern::kernels {
namespace {

// Softmax of one row into p (float values, double sum), as the model computes it.
void Softmax(const float* logits, int64_t n, float* p) {
  float mx = -INFINITY;
  for (int64_t e = 0; e < n; ++e) mx = std::max(mx, logits[e]);
  double sum = 0;
  for (int64_t e = 0; e < n; ++e) sum += (p[e] = std::exp(logits[e] - mx));
  for (int64_t e = 0; e < n; ++e) p[e] = float(p[e] / sum);
}

}  // namespace

void RouteMoe(const float* logits, int64_t rows, int64_t E, int64_t k, bool renormalize, MoeRouting& r) {
  const size_t slots = size_t(rows * k);
  r.ids.resize(slots);
  r.weights.resize(slots);
  r.probs.resize(size_t(E));
  r.order.resize(size_t(E));
  float* p = r.probs.data();
  for (int64_t t = 0; t < rows; ++t) {
    Softmax(logits + t * E, E, p);
    std::iota(r.order.begin(), r.order.end(), 0);
    std::partial_sort(r.order.begin(), r.order.begin() + k, r.order.end(),
                      [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    double top_sum = 0;
    for (int64_t i = 0; i < k; ++i) top_sum += p[r.order[size_t(i)]];
    for (int64_t i = 0; i < k; ++i) {
      const int32_t e = r.order[size_t(i)];
      r.ids[size_t(t * k + i)] = e;
      r.weights[size_t(t * k + i)] = renormalize ? float(p[e] / top_sum) : p[e];
    }
  }
  // Counting sort by expert: first[e] = the first slot of expert e.
  r.first.assign(size_t(E) + 1, 0);
  for (int32_t id : r.ids) r.first[size_t(id) + 1]++;
  std::partial_sum(r.first.begin(), r.first.end(), r.first.begin());
  r.slot_token.resize(slots);
  r.slot_weight.resize(slots);
  r.fill.assign(r.first.begin(), r.first.end() - 1);
  for (size_t i = 0; i < slots; ++i) {
    const int32_t pos = r.fill[size_t(r.ids[i])]++;
    r.slot_token[size_t(pos)] = int32_t(i / size_t(k));
    r.slot_weight[size_t(pos)] = r.weights[i];
  }
  r.active.clear();
  for (int64_t e = 0; e < E; ++e)
    if (r.first[size_t(e) + 1] > r.first[size_t(e)]) r.active.push_back(int32_t(e));
}

namespace ref {

void RouteMoe(const float* logits, int64_t rows, int64_t E, int64_t k, bool renormalize, MoeRouting& r) {
  r = MoeRouting{};
  std::vector<float> p(static_cast<size_t>(E));
  for (int64_t t = 0; t < rows; ++t) {
    Softmax(logits + t * E, E, p.data());
    std::vector<int32_t> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)]; });
    double top_sum = 0;
    for (int64_t i = 0; i < k; ++i) top_sum += p[size_t(order[size_t(i)])];
    for (int64_t i = 0; i < k; ++i) {
      r.ids.push_back(order[size_t(i)]);
      const float w = p[size_t(order[size_t(i)])];
      r.weights.push_back(renormalize ? float(w / top_sum) : w);
    }
  }
  for (int64_t e = 0; e < E; ++e) {
    r.first.push_back(int32_t(r.slot_token.size()));
    bool any = false;
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t i = 0; i < k; ++i)
        if (r.ids[size_t(t * k + i)] == e) {
          r.slot_token.push_back(int32_t(t));
          r.slot_weight.push_back(r.weights[size_t(t * k + i)]);
          any = true;
        }
    if (any) r.active.push_back(int32_t(e));
  }
  r.first.push_back(int32_t(r.slot_token.size()));
}

}  // namespace ref
}  // namespace tern::kernels
