#include "check/numerics_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tern::check {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Probabilities below this are rounding noise of f32 logprobs (a top-k that
// sums to 1 + 1e-8 leaves no rest, not a negative one).
constexpr double kMassFloor = 1e-7;

double Xlogy(double p, double q) {  // p log(p / q), 0 when p is 0
  if (p <= 0) return 0;
  return p * (std::log(p) - std::log(std::max(q, kMassFloor)));
}

}  // namespace

NumericsThresholds W4A4Thresholds() {
  NumericsThresholds t;
  t.tie_margin = 1.0;
  t.kl_max = 10;
  t.kl_mean = 0.15;
  t.gap_max = 30;
  return t;
}

std::optional<double> PositionLogprobs::Find(int32_t id) const {
  if (id == token && logprob) return logprob;
  for (const auto& [t, lp] : top)
    if (t == id) return lp;
  for (const auto& [t, lp] : extra)
    if (t == id) return lp;
  return std::nullopt;
}

KlBound KlOnSharedSupport(const PositionLogprobs& ref, const PositionLogprobs& dep) {
  KlBound b;
  double p_sum = 0, q_sum = 0, kl = 0;
  std::vector<int32_t> seen;
  for (const auto& [id, dep_lp] : dep.top) {
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;  // a server may repeat one
    seen.push_back(id);
    auto ref_lp = ref.Find(id);
    if (!ref_lp) continue;
    const double p = std::exp(*ref_lp), q = std::exp(dep_lp);
    kl += Xlogy(p, q);
    p_sum += p;
    q_sum += q;
    ++b.shared;
  }
  b.ref_rest = std::max(0.0, 1.0 - p_sum);
  b.dep_rest = std::max(0.0, 1.0 - q_sum);
  kl += Xlogy(b.ref_rest < kMassFloor ? 0 : b.ref_rest, b.dep_rest);
  b.kl = std::max(0.0, kl);  // >= 0 exactly; rounding may dip below
  return b;
}

PositionComparison ComparePosition(const PositionLogprobs& ref, const PositionLogprobs& dep,
                                   const NumericsThresholds& th) {
  PositionComparison c;
  c.position = dep.position;
  c.nonfinite = dep.nonfinite;
  if (dep.nonfinite) {
    c.divergence = "the deployment's logprobs are NaN or infinite";
    return c;
  }
  c.dep_top1 = dep.top.empty() ? dep.token : dep.top[0].first;
  c.ref_top1 = ref.top.empty() ? ref.token : ref.top[0].first;
  c.agree = c.dep_top1 == c.ref_top1;
  if (!c.agree) {
    auto best = ref.Find(c.ref_top1), theirs = ref.Find(c.dep_top1);
    c.ref_margin = best && theirs ? *best - *theirs : kInf;
  }
  c.kl = KlOnSharedSupport(ref, dep);
  std::vector<std::pair<int32_t, double>> dep_known = dep.top;
  if (dep.logprob) dep_known.emplace_back(dep.token, *dep.logprob);
  for (const auto& [id, lp] : dep_known) {
    auto r = ref.Find(id);
    if (!r || std::max(*r, lp) < std::log(th.gap_min_prob)) continue;
    const double g = std::abs(*r - lp);
    if (g > c.gap) {
      c.gap = g;
      c.gap_token = id;
      c.gap_ref_logprob = *r;
      c.gap_dep_logprob = lp;
    }
  }
  if (!c.agree && c.ref_margin >= th.tie_margin)
    c.divergence = std::isinf(c.ref_margin)
                       ? fmt::format("top-1 differs: the deployment's {} is not in the reference's top-k (the "
                                     "reference's {})",
                                     c.dep_top1, c.ref_top1)
                       : fmt::format("top-1 differs: deployment {} vs reference {}, which the reference prefers by "
                                     "{:.3f} nats (near-tie margin {})",
                                     c.dep_top1, c.ref_top1, c.ref_margin, th.tie_margin);
  else if (c.kl.kl > th.kl_max)
    c.divergence = fmt::format("KL {:.4g} > {} on the top-{} support", c.kl.kl, th.kl_max, c.kl.shared);
  else if (c.gap > th.gap_max)
    c.divergence = fmt::format("logprob of token {} differs by {:.3f} > {} nats (reference {:.3f}, deployment {:.3f})",
                               c.gap_token, c.gap, th.gap_max, c.gap_ref_logprob, c.gap_dep_logprob);
  return c;
}

SequenceComparison CompareSequence(std::span<const PositionLogprobs> ref, std::span<const PositionLogprobs> dep,
                                   const NumericsThresholds& th) {
  SequenceComparison s;
  double kl_sum = 0;
  size_t j = 0;
  for (const PositionLogprobs& d : dep) {
    while (j < ref.size() && ref[j].position < d.position) ++j;
    if (j == ref.size()) break;
    if (ref[j].position != d.position) continue;
    PositionComparison c = ComparePosition(ref[j], d, th);
    ++s.positions;
    if (c.nonfinite) {
      ++s.nonfinite;
    } else {
      s.agree += c.agree;
      s.near_ties += !c.agree && c.ref_margin < th.tie_margin;
      kl_sum += c.kl.kl;
      if (c.kl.kl > s.kl_max || s.kl_max_position < 0) {
        s.kl_max = c.kl.kl;
        s.kl_max_position = c.position;
      }
      if (c.gap > s.gap_max || s.gap_max_position < 0) {
        s.gap_max = c.gap;
        s.gap_max_position = c.position;
        s.gap_max_token = c.gap_token;
      }
      s.dep_rest_max = std::max(s.dep_rest_max, c.kl.dep_rest);
    }
    s.divergent += !c.divergence.empty();
    if (!c.divergence.empty() && !s.first_divergence) s.first_divergence = std::move(c);
  }
  const int64_t finite = s.positions - s.nonfinite;
  s.kl_mean = finite > 0 ? kl_sum / double(finite) : 0;
  if (s.positions == 0) {
    s.failure = "no position was scored by both sides";
  } else if (s.nonfinite > 0) {
    s.failure = fmt::format("NaN or infinite logprobs at {} of {} positions, first at position {}", s.nonfinite,
                            s.positions, s.first_divergence ? s.first_divergence->position : -1);
  } else if (s.first_divergence) {
    s.failure = fmt::format("first diverges at position {}: {}", s.first_divergence->position,
                            s.first_divergence->divergence);
  } else if (s.kl_mean > th.kl_mean) {
    s.failure = fmt::format("mean KL {:.4g} > {}", s.kl_mean, th.kl_mean);
  }
  return s;
}

RoundingJudgement JudgeWithRoundedVariants(const SequenceComparison& dep, std::span<const SequenceComparison> variants,
                                           const NumericsThresholds& th) {
  RoundingJudgement j;
  j.positions = dep.positions;
  j.divergent = dep.divergent;
  j.kl_mean = dep.kl_mean;
  j.kl_max = dep.kl_max;
  j.gap_max = dep.gap_max;
  for (const SequenceComparison& v : variants) {
    j.variant_divergent.push_back(v.divergent);
    j.variant_divergent_max = std::max(j.variant_divergent_max, v.divergent);
    j.variant_kl_mean_max = std::max(j.variant_kl_mean_max, v.kl_mean);
    j.variant_kl_max = std::max(j.variant_kl_max, v.kl_max);
    j.variant_gap_max = std::max(j.variant_gap_max, v.gap_max);
  }
  const int64_t w = int64_t(std::floor(1.5 * double(j.variant_divergent_max)));
  j.allowed_divergent = std::min(w + 2, std::max(w, dep.positions / 4));
  j.allowed_kl_mean = 1.5 * j.variant_kl_mean_max + th.kl_mean;
  j.allowed_kl_max = std::max(th.kl_max, 1.5 * j.variant_kl_max);
  j.allowed_gap_max = std::max(th.gap_max, 1.5 * j.variant_gap_max);
  if (variants.empty()) j.why = "no rounded reference";
  else if (dep.positions == 0) j.why = "no position was scored by both sides";
  else if (dep.nonfinite > 0) j.why = "NaN or infinite logprobs";
  else if (j.divergent > j.allowed_divergent)
    j.why = fmt::format("{} positions past the thresholds > {} allowed", j.divergent, j.allowed_divergent);
  else if (j.kl_mean > j.allowed_kl_mean)
    j.why = fmt::format("mean KL {:.3g} > {:.3g} allowed", j.kl_mean, j.allowed_kl_mean);
  else if (j.kl_max > j.allowed_kl_max)
    j.why = fmt::format("largest KL {:.3g} > {:.3g} allowed", j.kl_max, j.allowed_kl_max);
  else if (j.gap_max > j.allowed_gap_max)
    j.why = fmt::format("largest logprob gap {:.3g} > {:.3g} allowed", j.gap_max, j.allowed_gap_max);
  j.within = j.why.empty();
  return j;
}

}  // namespace tern::check
