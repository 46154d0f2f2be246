// MoE routing against its direct reference (a full stable sort per token, a
// scan of every expert for the grouping): the same experts, weights and slot
// tables for random logits, exact ties (to the lower id), k = 1 and k = E,
// with and without renormalisation; and buffers reused across batch sizes.
#include "kernels/moe_routing.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tern::kernels {
namespace {

void ExpectSame(const MoeRouting& got, const MoeRouting& want) {
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.first, want.first);
  EXPECT_EQ(got.slot_token, want.slot_token);
  EXPECT_EQ(got.active, want.active);
  ASSERT_EQ(got.weights.size(), want.weights.size());
  for (size_t i = 0; i < got.weights.size(); ++i) EXPECT_EQ(got.weights[i], want.weights[i]) << i;
  ASSERT_EQ(got.slot_weight.size(), want.slot_weight.size());
  for (size_t i = 0; i < got.slot_weight.size(); ++i) EXPECT_EQ(got.slot_weight[i], want.slot_weight[i]) << i;
}

TEST(MoeRoutingTest, MatchesTheReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  MoeRouting reused;  // one set of buffers across every case, as a layer keeps it
  for (int64_t E : {1, 4, 8, 128}) {
    for (int64_t k : {int64_t(1), std::min<int64_t>(2, E), E}) {
      for (int64_t rows : {1, 3, 17, 2}) {
        for (bool renorm : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "E=" << E << " k=" << k << " rows=" << rows << " renorm=" << renorm);
          std::vector<float> logits(size_t(rows * E));
          for (auto& x : logits) x = normal(rng);
          if (E >= 4) logits[1] = logits[2] = logits[3];  // an exact tie in row 0
          MoeRouting want;
          ref::RouteMoe(logits.data(), rows, E, k, renorm, want);
          RouteMoe(logits.data(), rows, E, k, renorm, reused);
          ExpectSame(reused, want);
          // Every token got k distinct experts; the slots cover each (token, expert) once.
          EXPECT_EQ(reused.slots(), rows * k);
          if (renorm && k > 0) {
            for (int64_t t = 0; t < rows; ++t) {
              double sum = 0;
              for (int64_t i = 0; i < k; ++i) sum += reused.weights[size_t(t * k + i)];
              EXPECT_NEAR(sum, 1.0, 1e-6);
            }
          }
        }
      }
    }
  }
}

TEST(MoeRoutingTest, TiesGoToTheLowerExpert) {
  const std::vector<float> logits = {0.5f, 2.0f, 2.0f, 2.0f, -1.0f};
  MoeRouting r;
  RouteMoe(logits.data(), 1, 5, 2, /*renormalize=*/true, r);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_FLOAT_EQ(r.weights[0], 0.5f);
  EXPECT_FLOAT_EQ(r.weights[1], 0.5f);
  EXPECT_EQ(r.active, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(r.first, (std::vector<int32_t>{0, 0, 1, 2, 2, 2}));
}

}  // namespace
}  // namespace tern::kernels
