// The numerics suite's arithmetic against values computed by hand (and, for
// the KL bound, against the full KL summed over the whole vocabulary), and
// its prompts file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include "check/numerics_client.h"
#include "check/numerics_compare.h"
#include "check/numerics_prompts.h"

namespace tern::check {
namespace {

PositionLogprobs Pos(int64_t position, std::vector<std::pair<int32_t, double>> probs) {
  PositionLogprobs p;
  p.position = position;
  for (auto& [id, pr] : probs) p.top.emplace_back(id, std::log(pr));
  p.token = p.top.empty() ? -1 : p.top[0].first;
  p.logprob = p.top.empty() ? std::optional<double>() : p.top[0].second;
  return p;
}

TEST(NumericsCompare, KlOnTheSharedSupportByHand) {
  // 0.7 ln(0.7/0.6) + 0.2 ln(0.2/0.3) + 0.1 ln(0.1/0.1) (the rest bucket).
  const auto ref = Pos(1, {{5, 0.7}, {9, 0.2}}), dep = Pos(1, {{5, 0.6}, {9, 0.3}});
  const KlBound b = KlOnSharedSupport(ref, dep);
  EXPECT_NEAR(b.kl, 0.026812454257448, 1e-12);
  EXPECT_EQ(b.shared, 2);
  EXPECT_NEAR(b.ref_rest, 0.1, 1e-12);
  EXPECT_NEAR(b.dep_rest, 0.1, 1e-12);
  EXPECT_NEAR(KlOnSharedSupport(ref, ref).kl, 0.0, 1e-15);
}

TEST(NumericsCompare, KlBoundNeverExceedsTheFullKl) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    const int V = 40;
    std::vector<double> a(V), b(V);
    double za = 0, zb = 0;
    for (int i = 0; i < V; ++i) {
      a[i] = std::exp(2 * noise(rng));
      b[i] = a[i] * std::exp(0.3 * noise(rng));
      za += a[i];
      zb += b[i];
    }
    double full = 0;
    for (int i = 0; i < V; ++i) full += a[i] / za * std::log((a[i] / za) / (b[i] / zb));
    // The deployment reports its top 8; the reference knows every logprob.
    std::vector<int> order(V);
    for (int i = 0; i < V; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int x, int y) { return b[x] > b[y]; });
    PositionLogprobs dep, ref;
    for (int k = 0; k < 8; ++k) dep.top.emplace_back(order[k], std::log(b[order[k]] / zb));
    for (int i = 0; i < V; ++i) ref.extra.emplace_back(i, std::log(a[i] / za));
    const KlBound kb = KlOnSharedSupport(ref, dep);
    EXPECT_LE(kb.kl, full + 1e-12) << trial;
    EXPECT_GE(kb.kl, 0.0);
    // With the whole vocabulary as support the bound is the full KL.
    PositionLogprobs dep_all;
    for (int i = 0; i < V; ++i) dep_all.top.emplace_back(i, std::log(b[i] / zb));
    EXPECT_NEAR(KlOnSharedSupport(ref, dep_all).kl, full, 1e-9);
  }
}

TEST(NumericsCompare, NearTieIsNotADivergenceButADecisiveFlipIs) {
  NumericsThresholds th;
  th.tie_margin = 0.25;
  th.kl_max = 1;     // only the top-1 rule matters here
  th.gap_max = 10;
  // Reference prefers 5 over 9 by ln(0.51/0.49) = 0.04 nats; the deployment picked 9.
  PositionComparison tie = ComparePosition(Pos(3, {{5, 0.51}, {9, 0.49}}), Pos(3, {{9, 0.5}, {5, 0.5}}), th);
  EXPECT_FALSE(tie.agree);
  EXPECT_NEAR(tie.ref_margin, std::log(0.51 / 0.49), 1e-12);
  EXPECT_TRUE(tie.divergence.empty()) << tie.divergence;
  // By ln(0.8/0.2) = 1.39 nats: a divergence.
  PositionComparison flip = ComparePosition(Pos(3, {{5, 0.8}, {9, 0.2}}), Pos(3, {{9, 0.6}, {5, 0.4}}), th);
  EXPECT_NE(flip.divergence.find("top-1 differs"), std::string::npos) << flip.divergence;
  // The deployment's top-1 unknown to the reference (another deployment's top-k): decisive.
  PositionComparison unknown = ComparePosition(Pos(3, {{5, 0.8}, {9, 0.2}}), Pos(3, {{7, 0.9}}), th);
  EXPECT_TRUE(std::isinf(unknown.ref_margin));
  EXPECT_FALSE(unknown.divergence.empty());
}

TEST(NumericsCompare, SequenceNamesTheFirstDivergingPositionAndMeanKl) {
  NumericsThresholds th;  // defaults
  std::vector<PositionLogprobs> ref, dep;
  for (int64_t p = 1; p <= 10; ++p) {
    ref.push_back(Pos(p, {{1, 0.9}, {2, 0.05}}));
    // Positions 7 and 9 are off: 1 drops to 0.5 (KL well above 0.05), the rest equal.
    dep.push_back(p == 7 || p == 9 ? Pos(p, {{1, 0.5}, {2, 0.45}}) : Pos(p, {{1, 0.9}, {2, 0.05}}));
  }
  SequenceComparison s = CompareSequence(ref, dep, th);
  EXPECT_EQ(s.positions, 10);
  EXPECT_EQ(s.agree, 10);
  ASSERT_TRUE(s.first_divergence.has_value());
  EXPECT_EQ(s.first_divergence->position, 7);
  EXPECT_NE(s.failure.find("position 7"), std::string::npos) << s.failure;
  EXPECT_EQ(s.kl_max_position, 7);
  // Per off position: 0.9 ln(0.9/0.5) + 0.05 ln(0.05/0.45) + 0.05 ln(0.05/0.05).
  const double off = 0.9 * std::log(0.9 / 0.5) + 0.05 * std::log(0.05 / 0.45);
  EXPECT_NEAR(s.kl_mean, 2 * off / 10, 1e-9);
  EXPECT_NEAR(s.gap_max, std::log(0.45 / 0.05), 1e-9);

  // Equal sequences pass; positions only one side scored are ignored.
  std::vector<PositionLogprobs> ref_more = ref;
  ref_more.push_back(Pos(11, {{1, 0.9}}));
  SequenceComparison same = CompareSequence(ref_more, ref, th);
  EXPECT_TRUE(same.failure.empty()) << same.failure;
  EXPECT_EQ(same.positions, 10);
  EXPECT_EQ(same.kl_max, 0);
  // Nothing in common fails.
  EXPECT_FALSE(CompareSequence({}, dep, th).failure.empty());
}

TEST(NumericsCompare, LogprobGapIgnoresTokensRareOnBothSides) {
  NumericsThresholds th;  // gap_max 0.5 over tokens of probability >= 1e-3 on one side
  // Token 9 at e^-15 vs e^-10: a 5-nat gap on a token neither side would pick.
  PositionComparison rare =
      ComparePosition(Pos(2, {{5, 0.999}, {9, std::exp(-10.0)}}), Pos(2, {{5, 0.999}, {9, std::exp(-15.0)}}), th);
  EXPECT_TRUE(rare.divergence.empty()) << rare.divergence;
  EXPECT_LT(rare.gap, 1e-9);
  // At 0.01 against 0.001 it counts: ln 10 = 2.3 nats.
  PositionComparison likely = ComparePosition(Pos(2, {{5, 0.98}, {9, 0.01}}), Pos(2, {{5, 0.98}, {9, 0.001}}), th);
  EXPECT_NEAR(likely.gap, std::log(10.0), 1e-9);
  EXPECT_NE(likely.divergence.find("token 9"), std::string::npos) << likely.divergence;
}

TEST(NumericsCompare, MeanKlThresholdAloneFails) {
  NumericsThresholds th;
  th.kl_max = 1;
  th.gap_max = 10;
  th.kl_mean = 1e-4;
  std::vector<PositionLogprobs> ref{Pos(1, {{1, 0.9}, {2, 0.05}})}, dep{Pos(1, {{1, 0.85}, {2, 0.1}})};
  SequenceComparison s = CompareSequence(ref, dep, th);
  EXPECT_FALSE(s.first_divergence.has_value());
  EXPECT_NE(s.failure.find("mean KL"), std::string::npos) << s.failure;
}

// Sequences of n positions of which the listed ones are just past the
// thresholds (KL 0.051, a 1.1-nat gap on token 2).
SequenceComparison OffAt(int n, std::vector<int> off) {
  std::vector<PositionLogprobs> ref, dep;
  for (int p = 1; p <= n; ++p) {
    ref.push_back(Pos(p, {{1, 0.9}, {2, 0.05}}));
    const bool bad = std::find(off.begin(), off.end(), p) != off.end();
    dep.push_back(bad ? Pos(p, {{1, 0.8}, {2, 0.15}}) : Pos(p, {{1, 0.9}, {2, 0.05}}));
  }
  return CompareSequence(ref, dep, {});
}

TEST(NumericsCompare, DivergentPositionsAreCounted) {
  EXPECT_EQ(OffAt(10, {}).divergent, 0);
  EXPECT_EQ(OffAt(10, {2, 3, 9}).divergent, 3);
}

// A BF16 deployment passes while its positions past the thresholds, mean KL,
// largest KL and largest gap stay within what the rounded references reach
// (numerics_compare.h): with references off at 4, 0 and 2 of 100 positions,
// 8 = floor(1.5 * 4) + 2 positions pass and 9 fail.
TEST(NumericsCompare, RoundedVariantsSetWhatABf16DeploymentMayMove) {
  const NumericsThresholds th;
  const auto off_at = [](int k) {
    std::vector<int> v;
    for (int i = 0; i < k; ++i) v.push_back(5 + 11 * i);
    return v;
  };
  const std::vector<SequenceComparison> variants = {OffAt(100, off_at(4)), OffAt(100, {}), OffAt(100, off_at(2))};
  const double per = 0.9 * std::log(0.9 / 0.8) + 0.05 * std::log(0.05 / 0.15);  // KL of an off position
  RoundingJudgement j = JudgeWithRoundedVariants(OffAt(100, off_at(8)), variants, th);
  EXPECT_EQ(j.divergent, 8);
  EXPECT_EQ(j.variant_divergent, (std::vector<int64_t>{4, 0, 2}));
  EXPECT_EQ(j.allowed_divergent, 8);
  EXPECT_NEAR(j.allowed_kl_mean, 1.5 * 4 * per / 100 + th.kl_mean, 1e-12);
  EXPECT_NEAR(j.allowed_kl_max, 1.5 * per, 1e-12);                    // above th.kl_max = 0.05
  EXPECT_NEAR(j.allowed_gap_max, 1.5 * std::log(0.15 / 0.05), 1e-9);  // the gap on token 2
  EXPECT_TRUE(j.within) << j.why;
  j = JudgeWithRoundedVariants(OffAt(100, off_at(9)), variants, th);
  EXPECT_FALSE(j.within);
  EXPECT_NE(j.why.find("9 positions"), std::string::npos) << j.why;

  // Positions far off (top-1 flipped, KL 2.5): 8 of 100 cross the mean KL; one of 1,000, the largest KL.
  const auto flipped = [](int n, int every) {
    std::vector<PositionLogprobs> ref, dep;
    for (int p = 1; p <= n; ++p) {
      ref.push_back(Pos(p, {{1, 0.9}, {2, 0.05}}));
      dep.push_back(p % every == 0 ? Pos(p, {{1, 0.05}, {2, 0.9}}) : Pos(p, {{1, 0.9}, {2, 0.05}}));
    }
    return CompareSequence(ref, dep, NumericsThresholds{});
  };
  j = JudgeWithRoundedVariants(flipped(100, 12), variants, th);
  EXPECT_EQ(j.divergent, 8);
  EXPECT_FALSE(j.within);
  EXPECT_NE(j.why.find("mean KL"), std::string::npos) << j.why;
  const std::vector<SequenceComparison> long_variants = {OffAt(1000, off_at(4))};
  j = JudgeWithRoundedVariants(flipped(1000, 1000), long_variants, th);
  EXPECT_EQ(j.divergent, 1);
  EXPECT_FALSE(j.within);
  EXPECT_NE(j.why.find("largest KL"), std::string::npos) << j.why;
  EXPECT_TRUE(JudgeWithRoundedVariants(OffAt(1000, {500}), long_variants, th).within);

  // 2 spare positions, but never more than a quarter of a short prompt's: with a reference off at
  // 1 of 8 positions, 2 pass (min(1 + 2, max(1, 8 / 4))) and 3 fail.
  const std::vector<SequenceComparison> short_variants = {OffAt(8, {3})};
  EXPECT_EQ(JudgeWithRoundedVariants(OffAt(8, {2, 5}), short_variants, th).allowed_divergent, 2);
  EXPECT_TRUE(JudgeWithRoundedVariants(OffAt(8, {2, 5}), short_variants, th).within);
  EXPECT_FALSE(JudgeWithRoundedVariants(OffAt(8, {2, 5, 7}), short_variants, th).within);
  // Where the rounded references stay within the thresholds, so must the deployment.
  const std::vector<SequenceComparison> clean = {OffAt(30, {}), OffAt(30, {})};
  j = JudgeWithRoundedVariants(OffAt(30, {7}), clean, th);
  EXPECT_FALSE(j.within);
  EXPECT_NE(j.why.find("largest KL"), std::string::npos) << j.why;
  // No variants, or a NaN, never pass this way.
  EXPECT_FALSE(JudgeWithRoundedVariants(OffAt(30, {7}), {}, th).within);
  std::vector<PositionLogprobs> r1{Pos(1, {{1, 0.9}})}, d1 = r1;
  d1[0].nonfinite = true;
  EXPECT_FALSE(JudgeWithRoundedVariants(CompareSequence(r1, d1, th), clean, th).within);
}

TEST(NumericsCompare, NanFailsNamingIt) {
  std::vector<PositionLogprobs> ref{Pos(1, {{1, 0.9}}), Pos(2, {{1, 0.9}})}, dep = ref;
  dep[1].nonfinite = true;
  SequenceComparison s = CompareSequence(ref, dep, {});
  EXPECT_EQ(s.nonfinite, 1);
  EXPECT_NE(s.failure.find("NaN"), std::string::npos) << s.failure;
  EXPECT_NE(s.failure.find("position 2"), std::string::npos) << s.failure;
}

// llama.cpp's entries skip the tokens it holds back inside a UTF-8 character.
// Worked by hand: generated ids A B C D with B held back send A C D at 0 2 3.
TEST(NumericsClient, SentTokensFindTheirPlacesAmongTheGenerated) {
  using V = std::vector<int32_t>;
  using P = std::vector<int64_t>;
  auto at = [](const V& g, const V& s) {
    auto r = AlignSentTokens(g, s);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : P{};
  };
  EXPECT_EQ(at({10, 11, 12, 13}, {10, 11, 12, 13}), (P{0, 1, 2, 3}));
  EXPECT_EQ(at({10, 11, 12, 13}, {10, 12, 13}), (P{0, 2, 3}));
  EXPECT_EQ(at({11, 11, 12}, {11, 12}), (P{-1, 2}));      // which 11 was held back is unknown
  EXPECT_EQ(at({9, 11, 11, 11}, {9, 11}), (P{0, -1}));     // the last ones held back, or the first
  EXPECT_EQ(at({5, 6, 5, 6}, {5, 6, 5}), (P{0, 1, 2}));    // the last id held back
  EXPECT_EQ(at({5, 7, 5, 6}, {5, 6}), (P{-1, 3}));
  EXPECT_EQ(at({1, 2, 3}, {}), (P{}));
  EXPECT_EQ(at({}, {}), (P{}));
  EXPECT_FALSE(AlignSentTokens({1, 2, 3}, {2, 1}).ok());   // not a subsequence
  EXPECT_FALSE(AlignSentTokens({1, 2}, {1, 2, 2}).ok());
  EXPECT_FALSE(AlignSentTokens({}, {4}).ok());
}

TEST(NumericsPrompts, FileForms) {
  const std::string path = ::testing::TempDir() + "/numerics_prompts.jsonl";
  {
    std::ofstream f(path);
    f << "# comment\n\n"
      << R"({"name": "greet", "messages": [{"role": "user", "content": "Hi"}], "thinking": true})" << "\n"
      << R"({"prompt": "The capital of France is"})" << "\n"
      << "Tell me a joke.\n";
  }
  auto p = LoadNumericsPrompts(path);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].name, "greet");
  EXPECT_TRUE((*p)[0].thinking);
  EXPECT_EQ((*p)[0].messages[0]["content"], "Hi");
  EXPECT_TRUE((*p)[1].messages.is_null());
  EXPECT_EQ((*p)[1].text, "The capital of France is");
  EXPECT_EQ((*p)[1].name, "file-4");
  EXPECT_EQ((*p)[2].messages[0]["content"], "Tell me a joke.");
  {
    std::ofstream f(path);
    f << R"({"messages": []})" << "\n";
  }
  auto bad = LoadNumericsPrompts(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":1:"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(LoadNumericsPrompts(path + ".missing").ok());
  EXPECT_EQ(BuiltInNumericsPrompts(512).size(), 6u);
}

}  // namespace
}  // namespace tern::check
