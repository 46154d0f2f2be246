#include "engine/metrics.h"

#include <algorithm>

namespace tern {

void Histogram::Observe(double v) {
  std::lock_guard lock(mu_);
  const size_t i = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[i]++;
  sum_ += v;
  count_++;
}

Histogram::Snapshot Histogram::Snap() const {
  std::lock_guard lock(mu_);
  Snapshot s;
  s.bounds = bounds_;
  uint64_t c = 0;
  for (uint64_t n : counts_) s.cumulative.push_back(c += n);
  s.sum = sum_;
  s.count = count_;
  return s;
}

}  // namespace tern
