#include "engine/sampler.h"

#include <cmath>
#include <map>

#include <gtest/gtest.h>

namespace tern {
namespace {

std::vector<float> Logits() { return {1.0f, 3.0f, 2.0f, -1.0f, 0.5f}; }

TEST(Sampler, GreedyIsArgmax) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p);
  auto l = Logits();
  EXPECT_EQ(s.Sample(l, {}, {}), 1);
  std::vector<float> ties = {2.0f, 5.0f, 5.0f};
  EXPECT_EQ(ArgMax(ties), 1);
}

TEST(Sampler, SameSeedSameDraws) {
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 42;
  Sampler a(p), b(p);
  for (int i = 0; i < 200; ++i) {
    auto la = Logits(), lb = Logits();
    ASSERT_EQ(a.Sample(la, {}, {}), b.Sample(lb, {}, {}));
  }
}

// Empirical frequencies against the softmax computed here independently.
TEST(Sampler, FrequenciesFollowSoftmaxWithTopKTopPMinP) {
  const std::vector<float> base = Logits();
  auto run = [&](SamplingParams p, const std::vector<double>& expect) {
    p.seed = 7;
    Sampler s(p);
    std::vector<int> hits(base.size(), 0);
    const int n = 40000;
    for (int i = 0; i < n; ++i) {
      auto l = base;
      hits[size_t(s.Sample(l, {}, {}))]++;
    }
    for (size_t i = 0; i < base.size(); ++i)
      EXPECT_NEAR(double(hits[i]) / n, expect[i], 0.01) << "token " << i;
  };
  auto softmax = [&](double t, std::vector<int> keep) {
    std::vector<double> e(base.size(), 0.0);
    double sum = 0;
    for (int k : keep) sum += (e[size_t(k)] = std::exp(base[size_t(k)] / t));
    for (auto& v : e) v /= sum;
    return e;
  };
  SamplingParams p;
  p.temperature = 0.7;
  run(p, softmax(0.7, {0, 1, 2, 3, 4}));
  p.top_k = 2;
  run(p, softmax(0.7, {1, 2}));
  p.top_k = 0;
  // At T=1 the sorted probabilities are .629, .231, .085, .052, .003: top_p 0.8 keeps two.
  p.temperature = 1.0;
  p.top_p = 0.8;
  run(p, softmax(1.0, {1, 2}));
  p.top_p = 1.0;
  // min_p 0.1 drops tokens below 0.0629: keeps 1, 2, 0.
  p.min_p = 0.1;
  run(p, softmax(1.0, {0, 1, 2}));
}

TEST(Sampler, Penalties) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0;
  p.frequency_penalty = 0.5;
  p.presence_penalty = 0.25;
  Sampler s(p);
  std::vector<float> l = {1.0f, 3.0f, 2.0f, -1.0f, 0.5f};
  const std::vector<int32_t> prompt = {3};
  const std::vector<int32_t> output = {1, 1, 4};
  s.Sample(l, prompt, output);
  // Repetition: 1 -> 3/2; 3 -> -1*2; 4 -> 0.5/2. Then frequency+presence on output tokens only.
  EXPECT_FLOAT_EQ(l[1], 1.5f - (0.5f * 2 + 0.25f));
  EXPECT_FLOAT_EQ(l[3], -2.0f);
  EXPECT_FLOAT_EQ(l[4], 0.25f - (0.5f + 0.25f));
  EXPECT_FLOAT_EQ(l[0], 1.0f);
  EXPECT_FLOAT_EQ(l[2], 2.0f);
}

TEST(Sampler, LogitBiasShiftsTheChoiceAndTheDistribution) {
  SamplingParams p;
  p.temperature = 0;
  p.logit_bias = {{0, 2.5f}, {4, -100.0f}, {99, 5.0f}};  // 99: outside the vocabulary, ignored
  Sampler greedy(p);
  auto l = Logits();
  EXPECT_EQ(greedy.Sample(l, {}, {}), 0);  // 1.0 + 2.5 beats 3.0
  EXPECT_FLOAT_EQ(l[0], 3.5f);
  EXPECT_FLOAT_EQ(l[4], -99.5f);
  EXPECT_FLOAT_EQ(l[1], 3.0f);
  // Sampling follows the softmax of the biased logits: bias token 3 up to 3.0
  // and token 1 down to 1.0; expected frequencies computed here.
  p.temperature = 1.0;
  p.seed = 11;
  p.logit_bias = {{3, 4.0f}, {1, -2.0f}};
  Sampler s(p);
  const std::vector<double> biased = {1.0, 1.0, 2.0, 3.0, 0.5};
  double sum = 0;
  for (double v : biased) sum += std::exp(v);
  std::vector<int> hits(5, 0);
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    auto x = Logits();
    hits[size_t(s.Sample(x, {}, {}))]++;
  }
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(double(hits[i]) / n, std::exp(biased[i]) / sum, 0.01) << "token " << i;
}

TEST(Sampler, MinNewTokensSuppressesStopTokensUntilReached) {
  SamplingParams p;
  p.temperature = 0;
  p.min_new_tokens = 2;
  p.min_tokens_suppressed = {1, 2};  // say EOS = 1 and a stop token id 2
  Sampler s(p);
  const std::vector<int32_t> none, one = {0}, two = {0, 0};
  auto l = Logits();
  EXPECT_EQ(s.Sample(l, {}, none), 0);  // 1 and 2 suppressed: 0 (1.0) is the best left
  EXPECT_EQ(l[1], -INFINITY);
  EXPECT_EQ(l[2], -INFINITY);
  l = Logits();
  EXPECT_EQ(s.Sample(l, {}, one), 0);
  l = Logits();
  EXPECT_EQ(s.Sample(l, {}, two), 1);  // reached: EOS allowed again
  // Random sampling never draws a suppressed token.
  p.temperature = 1.0;
  p.seed = 5;
  p.min_new_tokens = 1;
  Sampler r(p);
  for (int i = 0; i < 2000; ++i) {
    l = Logits();
    const int32_t t = r.Sample(l, {}, none);
    ASSERT_NE(t, 1);
    ASSERT_NE(t, 2);
  }
}

TEST(Sampler, ValidateRejectsBadValues) {
  SamplingParams p;
  p.temperature = -1;
  EXPECT_FALSE(p.Validate().ok());
  p = {};
  p.top_p = 0;
  EXPECT_FALSE(p.Validate().ok());
  p = {};
  p.top_k = -5;
  EXPECT_FALSE(p.Validate().ok());
  p = {};
  p.presence_penalty = 3;
  EXPECT_FALSE(p.Validate().ok());
  p = {};
  p.min_new_tokens = -1;
  EXPECT_FALSE(p.Validate().ok());
  p = {};
  p.logit_bias = {{1, NAN}};
  EXPECT_FALSE(p.Validate().ok());
  p = {};
  EXPECT_TRUE(p.Validate().ok());
}

}  // namespace
}  // namespace tern
