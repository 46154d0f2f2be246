// The gated delta rule on every SIMD target against the scalar reference, for
// both forms, with head sizes that leave vector tails, strided rows (as the
// layer lays q, k, v out) and a strided g / beta; and the chunked reference
// against the recurrent one (transformers computes prompts with the first and
// decode steps with the second; so does tern). Bound: the state is a
// contraction (decay <= 1, |k| = 1, beta in [0, 1]), so float rounding stays
// at a few units of 2^-24 per step; 1e-5 normalised RMS leaves a wide margin
// and catches any wrong term (which moves outputs by O(1)).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/test_util.h"

namespace tern::kernels {
namespace {

using testing::ForEachSimdTarget;

double Nrms(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// Inputs as GatedDeltaNet lays them out: per token a row of C floats holding
// [q | k | v] (q, k l2-normalised), log-decays and betas strided by gb.
struct Case {
  int64_t dk, dv, n, gb;
  std::vector<float> rows, g, beta, s0;
  int64_t row_stride() const { return 2 * dk + dv + 3; }  // (+3: rows not multiples of the vector width)

  Case(std::mt19937& rng, int64_t dk_, int64_t dv_, int64_t n_, int64_t gb_) : dk(dk_), dv(dv_), n(n_), gb(gb_) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    rows.resize(size_t(n * row_stride()));
    for (auto& x : rows) x = normal(rng);
    for (int64_t t = 0; t < n; ++t)
      for (int part = 0; part < 2; ++part) {
        float* r = rows.data() + t * row_stride() + part * dk;
        double ss = 0;
        for (int64_t d = 0; d < dk; ++d) ss += double(r[d]) * r[d];
        for (int64_t d = 0; d < dk; ++d) r[d] = float(r[d] / std::sqrt(ss));
      }
    g.resize(size_t(n * gb));
    beta.resize(size_t(n * gb));
    for (auto& x : g) x = -3.0f * unit(rng);
    for (auto& x : beta) x = unit(rng);
    s0.resize(size_t(dk * dv));
    for (auto& x : s0) x = 0.3f * normal(rng);
  }
  DeltaRuleArgs Args(std::vector<float>& S, std::vector<float>& o) const {
    S = s0;
    o.assign(size_t(n * dv), 0.0f);
    return {.S = S.data(), .dk = dk, .dv = dv, .n = n, .q = rows.data(), .k = rows.data() + dk,
            .qk_stride = row_stride(), .v = rows.data() + 2 * dk, .v_stride = row_stride(), .g = g.data(),
            .beta = beta.data(), .gb_stride = gb, .o = o.data(), .o_stride = dv};
  }
};

TEST(GatedDeltaRuleTest, BothFormsMatchTheReferenceOnEveryTarget) {
  std::mt19937 rng(3);
  ForEachSimdTarget([&] {
    for (auto [dk, dv] : {std::pair<int64_t, int64_t>{24, 20}, {13, 37}, {128, 128}, {1, 5}}) {
      for (int64_t n : {1, 3, 17, 70}) {
        SCOPED_TRACE(::testing::Message() << "dk=" << dk << " dv=" << dv << " n=" << n);
        const Case c(rng, dk, dv, n, 3);
        std::vector<float> s_ref, o_ref, s, o;
        ref::GatedDeltaRuleRecurrent(c.Args(s_ref, o_ref));
        GatedDeltaRuleRecurrent(c.Args(s, o));
        EXPECT_LT(Nrms(o, o_ref), 1e-5) << "recurrent outputs";
        EXPECT_LT(Nrms(s, s_ref), 1e-5) << "recurrent state";
        for (int64_t chunk : {16, 64}) {
          ref::GatedDeltaRuleChunked(c.Args(s_ref, o_ref), chunk);
          GatedDeltaRuleChunked(c.Args(s, o), chunk);
          EXPECT_LT(Nrms(o, o_ref), 1e-5) << "chunked outputs, chunk " << chunk;
          EXPECT_LT(Nrms(s, s_ref), 1e-5) << "chunked state, chunk " << chunk;
        }
      }
    }
  });
}

TEST(GatedDeltaRuleTest, ChunkedEqualsRecurrent) {
  std::mt19937 rng(4);
  for (int64_t n : {1, 5, 16, 63, 64, 65, 150}) {
    for (int64_t chunk : {16, 64}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " chunk=" << chunk);
      const Case c(rng, 24, 20, n, 1);
      std::vector<float> s_rec, o_rec, s_chk, o_chk;
      ref::GatedDeltaRuleRecurrent(c.Args(s_rec, o_rec));
      ref::GatedDeltaRuleChunked(c.Args(s_chk, o_chk), chunk);
      EXPECT_LT(Nrms(o_chk, o_rec), 1e-5) << "outputs";
      EXPECT_LT(Nrms(s_chk, s_rec), 1e-5) << "final state";
    }
  }
}

}  // namespace
}  // namespace tern::kernels
