// `tern check --suite numerics` against the scripted server in each logprob
// dialect, with a reference that computes the toy model of mock_server.mjs
// independently (here, in C++: 64 tokens, logit(t | q) = -((7 t + 13 q) mod
// 61) / 8): a right deployment passes with KL 0; a skewed one fails naming
// the position where it starts; NaN logprobs fail naming NaN; another
// deployment can be the reference.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "check/mock_process.h"
#include "check/runner.h"

namespace tern::check {
namespace {

using testing::MockServer;

// skew: the second most likely token gets +1.5 (as the mock's numerics-skew).
std::vector<double> ToyLogprobs(int32_t prev, bool skew = false) {
  std::vector<double> l(64);
  for (int t = 0; t < 64; ++t) l[size_t(t)] = -double((7 * t + 13 * prev) % 61) / 8;
  if (skew) {
    std::vector<int32_t> order(64);
    for (int32_t i = 0; i < 64; ++i) order[size_t(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
    l[size_t(order[1])] += 1.5;
  }
  double mx = *std::max_element(l.begin(), l.end()), z = 0;
  for (double v : l) z += std::exp(v - mx);
  for (double& v : l) v -= mx + std::log(z);
  return l;
}

// The toy model; with `variants`, BF16-rounded variants that stand in for
// rounding: variant v is skewed (as the mock's numerics-skew) at the
// positions p with (7 p + v) % 29 == 0, about one in 29.
class ToyReference : public LogprobReference {
 public:
  explicit ToyReference(int variants = 0, bool variants_fail = false)
      : variants_(variants), variants_fail_(variants_fail) {}
  std::string Describe() const override { return "the toy model"; }
  int RoundedVariants() const override { return variants_; }
  Result<std::vector<PositionLogprobs>> ScoreRounded(int variant, const std::vector<int32_t>& tokens, int64_t first,
                                                     int top_k, const std::vector<std::vector<int32_t>>& want) override {
    if (variants_fail_) return Status::Error("out of memory (test)");
    skew_of_ = variant;
    auto r = Score(tokens, first, top_k, want);
    skew_of_ = -1;
    return r;
  }
  Result<std::vector<int32_t>> Tokenize(const NumericsPrompt& p) override {
    std::string text = p.messages.is_null() ? p.text : p.messages.back()["content"].get<std::string>();
    std::vector<int32_t> ids{1};
    for (unsigned char c : text)
      if (ids.size() < 40) ids.push_back(int32_t(c % 60 + 2));
    return ids;
  }
  Result<std::vector<PositionLogprobs>> Score(const std::vector<int32_t>& tokens, int64_t first, int top_k,
                                              const std::vector<std::vector<int32_t>>& want) override {
    std::vector<PositionLogprobs> out;
    for (int64_t p = first; p < int64_t(tokens.size()); ++p) {
      const std::vector<double> lp = ToyLogprobs(tokens[size_t(p - 1)], skew_of_ >= 0 && (7 * p + skew_of_) % 29 == 0);
      PositionLogprobs pos{.position = p, .token = tokens[size_t(p)], .logprob = lp[size_t(tokens[size_t(p)])]};
      std::vector<int32_t> order(64);
      for (int32_t i = 0; i < 64; ++i) order[size_t(i)] = i;
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return lp[size_t(a)] > lp[size_t(b)]; });
      for (int k = 0; k < top_k; ++k) pos.top.emplace_back(order[size_t(k)], lp[size_t(order[size_t(k)])]);
      for (int32_t id : want[size_t(p - first)]) pos.extra.emplace_back(id, lp[size_t(id)]);
      out.push_back(std::move(pos));
    }
    ++scored;
    return out;
  }
  std::string TokenText(int32_t id) const override { return "<" + std::to_string(id) + ">"; }
  static inline int scored = 0;

 private:
  int variants_;
  bool variants_fail_;
  int skew_of_ = -1;  // the variant being scored
};

CheckOptions Numerics(const std::string& url) {
  CheckOptions o;
  o.url = url;
  o.suite = "numerics";
  o.timeout_s = 20;
  o.numerics.reference.model_dir = "toy";
  o.numerics.tokens = 16;
  o.numerics.top_logprobs = 5;
  o.numerics.loader = [](const ReferenceModelSpec&) -> Result<std::unique_ptr<LogprobReference>> {
    return std::unique_ptr<LogprobReference>(new ToyReference);
  };
  return o;
}

std::map<std::string, CheckResult> ByName(const RunReport& r) {
  std::map<std::string, CheckResult> m;
  for (const auto& c : r.results) m[c.name] = c;
  return m;
}

std::string Dump(const RunReport& r) {
  std::string s = r.fatal;
  for (const auto& c : r.results) s += "\n  " + c.name + " " + OutcomeName(c.outcome) + ": " + c.detail;
  return s;
}

#define START_MOCK(var, ...)                                    \
  MockServer var(__VA_ARGS__);                                  \
  if (testing::NodeBinary().empty()) GTEST_SKIP() << "no node"; \
  ASSERT_TRUE(var.ok()) << var.error()

class NumericsIntegration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }
};

TEST_F(NumericsIntegration, RightDeploymentPassesInEveryDialect) {
  for (const char* dialect : {"sglang", "vllm", "llamacpp"}) {
    START_MOCK(mock, dialect);
    RunReport r = RunChecks(Numerics(mock.url()));
    EXPECT_EQ(r.exit_code, kExitPassed) << dialect << Dump(r);
    auto rows = ByName(r);
    ASSERT_EQ(rows.size(), 7u) << Dump(r);  // six built-in prompts and the overall row
    const CheckResult& all = rows["numerics"];
    EXPECT_EQ(all.outcome, Outcome::kPass) << all.detail;
    EXPECT_DOUBLE_EQ(all.metrics["top1_agreement"].get<double>(), 1.0) << all.detail;
    EXPECT_LT(all.metrics["kl_max"].get<double>(), 1e-12) << all.detail;
    const std::string api = all.metrics["api"];
    const std::string d = dialect;
    EXPECT_NE(api.find(d == "sglang" ? "/generate" : d == "vllm" ? "prompt_logprobs" : "n_probs"), std::string::npos)
        << api;
    // SGLang and vLLM score the prompt too; llama.cpp only what it generates.
    const CheckResult& chat = rows["numerics.chat"];
    EXPECT_EQ(chat.metrics["prompt_scored"].get<bool>(), d != "llamacpp") << chat.detail;
    EXPECT_EQ(chat.metrics["output_tokens"].get<int>(), 16);
    EXPECT_EQ(chat.metrics["positions"].get<int>(),
              d == "llamacpp" ? 16 : chat.metrics["prompt_tokens"].get<int>() - 1 + 16);
  }
}

// llama.cpp sends no distribution for a token that ends inside a UTF-8
// character; the others are compared at their own positions (misplaced, each
// would be compared with the previous position's reference and fail).
TEST_F(NumericsIntegration, LlamaCppHeldBackTokensAreLeftUnscored) {
  START_MOCK(mock, "llamacpp,held-back");
  RunReport r = RunChecks(Numerics(mock.url()));
  EXPECT_EQ(r.exit_code, kExitPassed) << Dump(r);
  auto rows = ByName(r);
  const CheckResult& all = rows["numerics"];
  EXPECT_GT(all.metrics["unscored_output_tokens"].get<int64_t>(), 0) << all.detail;
  EXPECT_DOUBLE_EQ(all.metrics["top1_agreement"].get<double>(), 1.0) << all.detail;
  int64_t positions = 0, unscored = 0, output = 0;
  for (const auto& [name, c] : rows) {
    if (name == "numerics") continue;
    positions += c.metrics["positions"].get<int64_t>();
    unscored += c.metrics["unscored_output_tokens"].get<int64_t>();
    output += c.metrics["output_tokens"].get<int64_t>();
    if (c.metrics["unscored_output_tokens"].get<int64_t>() > 0) {
      EXPECT_NE(c.detail.find("ends inside a UTF-8 character"), std::string::npos) << c.detail;
    }
  }
  EXPECT_EQ(positions + unscored, output);
}

TEST_F(NumericsIntegration, SkewedDeploymentFailsAtTheFirstDivergingPosition) {
  START_MOCK(mock, "sglang,numerics-skew");
  RunReport r = RunChecks(Numerics(mock.url()));
  EXPECT_EQ(r.exit_code, kExitFailed) << Dump(r);
  auto rows = ByName(r);
  const CheckResult& chat = rows["numerics.chat"];
  EXPECT_EQ(chat.outcome, Outcome::kFail);
  EXPECT_NE(chat.detail.find("output token 5"), std::string::npos) << chat.detail;
  const int prompt_tokens = chat.metrics["prompt_tokens"];
  EXPECT_EQ(chat.metrics["first_divergence"]["position"].get<int>(), prompt_tokens + 5) << chat.detail;
  EXPECT_EQ(chat.metrics["first_divergence"]["in"], "output");
  EXPECT_EQ(rows["numerics"].outcome, Outcome::kFail);
}

CheckOptions WithVariants(const std::string& url, bool variants_fail = false) {
  CheckOptions o = Numerics(url);
  o.numerics.loader = [variants_fail](const ReferenceModelSpec& spec) -> Result<std::unique_ptr<LogprobReference>> {
    EXPECT_NE(spec.numerics, "auto");  // resolved before the reference loads
    return std::unique_ptr<LogprobReference>(new ToyReference(kBf16RoundedVariants, variants_fail));
  };
  return o;
}

// A deployment off at two output positions: judged as BF16 (auto: its
// /get_server_info says so) it passes, as the rounded references move as
// many; judged as f32 (it says f32, or nothing) it fails there.
TEST_F(NumericsIntegration, Bf16DeploymentIsJudgedAgainstRoundedReferences) {
  {
    START_MOCK(mock, "sglang,numerics-flips,bf16-activations");
    RunReport r = RunChecks(WithVariants(mock.url()));
    EXPECT_EQ(r.exit_code, kExitPassed) << Dump(r);
    auto rows = ByName(r);
    const CheckResult& chat = rows["numerics.chat"];
    EXPECT_NE(chat.detail.find("within BF16 rounding (2 of"), std::string::npos) << chat.detail;
    EXPECT_TRUE(chat.metrics["bf16_rounding"]["within"].get<bool>());
    EXPECT_EQ(chat.metrics["bf16_rounding"]["rounded_references_divergent_positions"].size(), size_t(kBf16RoundedVariants));
    EXPECT_EQ(rows["numerics"].metrics["judged_as"], "bf16");
    EXPECT_NE(rows["numerics"].detail.find("judged as a BF16 deployment"), std::string::npos) << rows["numerics"].detail;
  }
  {  // --rounded-references 0: judged position by position even as BF16
    START_MOCK(mock, "sglang,numerics-flips,bf16-activations");
    CheckOptions o = WithVariants(mock.url());
    o.numerics.rounded_references = 0;
    RunReport r = RunChecks(o);
    EXPECT_EQ(r.exit_code, kExitFailed) << Dump(r);
    auto rows = ByName(r);
    EXPECT_FALSE(rows["numerics.chat"].metrics.contains("bf16_rounding"));
    EXPECT_NE(rows["numerics"].detail.find("--rounded-references 0"), std::string::npos) << rows["numerics"].detail;
  }
  for (const char* mode : {"sglang,numerics-flips,f32-activations", "sglang,numerics-flips"}) {
    START_MOCK(mock, mode);
    RunReport r = RunChecks(WithVariants(mock.url()));
    EXPECT_EQ(r.exit_code, kExitFailed) << mode << Dump(r);
    auto rows = ByName(r);
    EXPECT_EQ(rows["numerics"].metrics["judged_as"], "full") << mode;
    EXPECT_FALSE(rows["numerics.chat"].metrics.contains("bf16_rounding")) << mode;
    const std::string why = rows["numerics"].metrics["judged_as_why"];
    EXPECT_NE(why.find(std::string(mode).find("f32") != std::string::npos ? "says activations f32" : "does not say"),
              std::string::npos)
        << why;
  }
}

// Asked for top-k logprobs, a deployment that sends none fails: no
// distribution was compared (an empty top-k gave a KL of 0 everywhere).
TEST_F(NumericsIntegration, NoTopLogprobsAtAllFails) {
  START_MOCK(mock, "sglang,no-top-logprobs");
  RunReport r = RunChecks(Numerics(mock.url()));
  EXPECT_EQ(r.exit_code, kExitFailed) << Dump(r);
  auto rows = ByName(r);
  EXPECT_NE(rows["numerics.chat"].detail.find("sent none at any"), std::string::npos) << rows["numerics.chat"].detail;
  EXPECT_GT(rows["numerics.chat"].metrics["positions_without_top_k"].get<int64_t>(), 0);
}

// A deployment that says it quantizes its activations (auto: w4a4) is judged
// by the thresholds --reference-numerics w4a4 gives, with any given ones on
// top (it got f32's, and a correct W4A4 deployment failed).
TEST_F(NumericsIntegration, AutoW4a4DeploymentGetsW4a4Thresholds) {
  START_MOCK(mock, "sglang,w4a4-activations");
  CheckOptions o = Numerics(mock.url());
  o.numerics.quantized_thresholds.tie_margin = 0.75;  // as --tie-margin 0.75 sets it
  RunReport r = RunChecks(o);
  auto rows = ByName(r);
  EXPECT_EQ(rows["numerics"].metrics["judged_as"], "w4a4") << Dump(r);
  const nlohmann::json& th = rows["numerics"].metrics["thresholds"];
  EXPECT_EQ(th["kl_max"].get<double>(), W4A4Thresholds().kl_max) << th.dump();
  EXPECT_EQ(th["gap_max"].get<double>(), W4A4Thresholds().gap_max) << th.dump();
  EXPECT_EQ(th["tie_margin"].get<double>(), 0.75) << th.dump();
}

// One that says it takes 8-bit activations (tern's w4a8) is judged as W4A8
// (a reference quantizing the same way) by the f32 thresholds, given ones on
// top; the reference mirrors its KV cache dtype.
TEST_F(NumericsIntegration, AutoW4a8DeploymentIsJudgedAsW4a8) {
  START_MOCK(mock, "sglang,w4a8-activations");
  CheckOptions o = Numerics(mock.url());
  o.numerics.thresholds.gap_max = 7;  // as --max-logprob-gap 7 sets it
  ReferenceModelSpec seen;
  const ReferenceLoader inner = o.numerics.loader;
  o.numerics.loader = [&](const ReferenceModelSpec& spec) {
    seen = spec;
    return inner(spec);
  };
  RunReport r = RunChecks(o);
  auto rows = ByName(r);
  EXPECT_EQ(rows["numerics"].metrics["judged_as"], "w4a8") << Dump(r);
  EXPECT_EQ(seen.numerics, "w4a8");
  EXPECT_EQ(seen.kv_cache_dtype, "fp16");
  const nlohmann::json& th = rows["numerics"].metrics["thresholds"];
  EXPECT_EQ(th["kl_max"].get<double>(), NumericsThresholds{}.kl_max) << th.dump();
  EXPECT_EQ(th["kl_mean"].get<double>(), NumericsThresholds{}.kl_mean) << th.dump();
  EXPECT_EQ(th["gap_max"].get<double>(), 7.0) << th.dump();
  EXPECT_NE(rows["numerics"].detail.find("judged as a W4A8 deployment"), std::string::npos) << rows["numerics"].detail;
}

// Judged as BF16, a deployment off from output token 5 on still fails (more
// positions than the rounded references), and says why; when the rounded
// references cannot run, the prompt is judged position by position.
TEST_F(NumericsIntegration, Bf16JudgingStillFailsAWrongDeployment) {
  {
    START_MOCK(mock, "sglang,numerics-skew,bf16-activations");
    RunReport r = RunChecks(WithVariants(mock.url()));
    EXPECT_EQ(r.exit_code, kExitFailed) << Dump(r);
    auto rows = ByName(r);
    const CheckResult& chat = rows["numerics.chat"];
    EXPECT_EQ(chat.outcome, Outcome::kFail);
    EXPECT_NE(chat.detail.find("more than BF16 rounding explains"), std::string::npos) << chat.detail;
    EXPECT_FALSE(chat.metrics["bf16_rounding"]["within"].get<bool>());
  }
  {
    START_MOCK(mock, "sglang,numerics-flips,bf16-activations");
    RunReport r = RunChecks(WithVariants(mock.url(), /*variants_fail=*/true));
    EXPECT_EQ(r.exit_code, kExitFailed) << Dump(r);
    auto rows = ByName(r);
    const CheckResult& chat = rows["numerics.chat"];
    EXPECT_NE(chat.detail.find("the BF16-rounded references failed: out of memory (test)"), std::string::npos)
        << chat.detail;
  }
}

TEST_F(NumericsIntegration, NanLogprobsFailNamingNan) {
  START_MOCK(mock, "sglang,nan-logprobs");
  RunReport r = RunChecks(Numerics(mock.url()));
  EXPECT_EQ(r.exit_code, kExitFailed) << Dump(r);
  auto rows = ByName(r);
  EXPECT_NE(rows["numerics.chat"].detail.find("NaN"), std::string::npos) << rows["numerics.chat"].detail;
  EXPECT_NE(rows["numerics.chat"].detail.find("output token 3"), std::string::npos) << rows["numerics.chat"].detail;
  EXPECT_NE(rows["numerics"].detail.find("NaN"), std::string::npos) << rows["numerics"].detail;
}

TEST_F(NumericsIntegration, AnotherDeploymentAsTheReference) {
  START_MOCK(under_test, "sglang");
  START_MOCK(reference, "vllm");
  START_MOCK(skewed, "vllm,numerics-skew-prompt");
  CheckOptions o = Numerics(under_test.url());
  o.numerics.reference.model_dir.clear();
  o.numerics.loader = nullptr;
  o.numerics.reference_url = reference.url();
  RunReport r = RunChecks(o);
  EXPECT_EQ(r.exit_code, kExitPassed) << Dump(r);
  EXPECT_NE(ByName(r)["numerics"].metrics["reference"].get<std::string>().find(reference.url()), std::string::npos);
  // A skewed reference scores the deployment's tokens (teacher-forced) with
  // its own skew on the second choice of every position: the two disagree.
  o.numerics.reference_url = skewed.url();
  RunReport bad = RunChecks(o);
  EXPECT_EQ(bad.exit_code, kExitFailed) << Dump(bad);
  // A reference that sends NaN is no reference (its empty top-k agreed with anything).
  START_MOCK(nan_ref, "vllm,nan-prompt-logprobs");
  o.numerics.reference_url = nan_ref.url();
  RunReport nan = RunChecks(o);
  EXPECT_EQ(nan.exit_code, kExitFailed) << Dump(nan);
  EXPECT_NE(Dump(nan).find("the reference's logprobs at position"), std::string::npos) << Dump(nan);
}

TEST_F(NumericsIntegration, UnknownServerIsProbedApiByApi) {
  // Not SGLang (no /generate: 404), so vLLM's completions answer.
  START_MOCK(mock, "vllm,anonymous");
  RunReport r = RunChecks(Numerics(mock.url()));
  EXPECT_EQ(r.exit_code, kExitPassed) << Dump(r);
  EXPECT_EQ(r.server.dialect, "openai-compatible");
  EXPECT_NE(ByName(r)["numerics"].metrics["api"].get<std::string>().find("vLLM"), std::string::npos);
}

TEST_F(NumericsIntegration, NoReferenceIsABadOption) {
  START_MOCK(mock, "sglang");
  CheckOptions o = Numerics(mock.url());
  o.numerics.reference.model_dir.clear();
  RunReport r = RunChecks(o);
  EXPECT_EQ(r.exit_code, kExitUnreachable);
  EXPECT_NE(r.fatal.find("--reference-model"), std::string::npos) << r.fatal;
}

}  // namespace
}  // namespace tern::check
