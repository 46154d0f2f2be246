// The chunked delta rule equals the recurrence (transformers computes prompts
// with the first and decode steps with the second; so does tern).
#include "model/gated_deltanet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tern {
namespace {

TEST(DeltaRuleTest, ChunkedEqualsRecurrent) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const int64_t dk = 24, dv = 20;
  for (int64_t n : {1, 5, 16, 63, 64, 65, 150}) {
    for (int64_t chunk : {16, 64}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " chunk=" << chunk);
      // Rows as the layer lays them out: q, k in rows of stride 2*dk (l2-normalised), v stride dv.
      std::vector<float> qk(static_cast<size_t>(n * 2 * dk)), v(static_cast<size_t>(n * dv)),
          g(static_cast<size_t>(n)), beta(static_cast<size_t>(n));
      for (auto& x : qk) x = normal(rng);
      for (int64_t t = 0; t < n; ++t)
        for (int part = 0; part < 2; ++part) {
          float* r = qk.data() + t * 2 * dk + part * dk;
          double ss = 0;
          for (int64_t d = 0; d < dk; ++d) ss += double(r[d]) * r[d];
          for (int64_t d = 0; d < dk; ++d) r[d] = float(r[d] / std::sqrt(ss));
        }
      for (auto& x : v) x = normal(rng);
      for (auto& x : g) x = -3.0f * unit(rng);  // log-decays
      for (auto& x : beta) x = unit(rng);
      std::vector<float> s0(static_cast<size_t>(dk * dv));
      for (auto& x : s0) x = 0.3f * normal(rng);
      std::vector<float> s_rec = s0, s_chk = s0, o_rec(static_cast<size_t>(n * dv)), o_chk(static_cast<size_t>(n * dv));
      DeltaRuleRecurrent(s_rec.data(), dk, dv, n, qk.data(), qk.data() + dk, 2 * dk, v.data(), dv, g.data(),
                         beta.data(), 1, o_rec.data(), dv);
      DeltaRuleChunked(s_chk.data(), dk, dv, n, qk.data(), qk.data() + dk, 2 * dk, v.data(), dv, g.data(),
                       beta.data(), 1, o_chk.data(), dv, chunk);
      double num = 0, den = 0;
      for (size_t i = 0; i < o_rec.size(); ++i) {
        num += (o_rec[i] - o_chk[i]) * double(o_rec[i] - o_chk[i]);
        den += double(o_rec[i]) * o_rec[i];
      }
      EXPECT_LT(std::sqrt(num / den), 1e-5) << "outputs";
      num = den = 0;
      for (size_t i = 0; i < s_rec.size(); ++i) {
        num += (s_rec[i] - s_chk[i]) * double(s_rec[i] - s_chk[i]);
        den += double(s_rec[i]) * s_rec[i];
      }
      EXPECT_LT(std::sqrt(num / den), 1e-5) << "final state";
    }
  }
}

}  // namespace
}  // namespace tern
