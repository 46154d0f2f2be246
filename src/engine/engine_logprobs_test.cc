// Prompt logprobs (EngineRequest::prompt_logprob_start): each prompt position's
// logprob, rank and top-k equal those computed from the logits row the engine
// gives when that prefix is the whole prompt (its last row predicts the next
// token), under chunked prefill, from a warm prefix cache and for the choices
// of a group; max_tokens 0 only prefills.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "engine/engine_test_util.h"

namespace tern {
namespace {

class PromptLogprobsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "/engine_logprobs_model";
    testing::WriteTinyMoe(dir_);
  }
  static std::unique_ptr<Model> Load() {
    auto m = LoadModel(dir_, {.threads = 2});
    EXPECT_TRUE(m.ok()) << m.status().message();
    return std::move(*m);
  }
  static std::string dir_;
};
std::string PromptLogprobsTest::dir_;

std::vector<int32_t> Prompt(int len) {
  std::vector<int32_t> p;
  for (int i = 0; i < len; ++i) p.push_back(3 + (i * 37 + 11) % 90);
  return p;
}

// The expected entry for prompt[p]: from the logits row of prompt[0, p) run
// alone (one greedy token with return_logits), log-softmax in double.
struct Expected {
  double logprob;
  int rank;
  std::vector<int32_t> top;
};
Expected FromPrefix(Model& m, const std::vector<int32_t>& prompt, size_t p, int k) {
  EngineRequest r{.id = "prefix", .prompt = std::vector<int32_t>(prompt.begin(), prompt.begin() + std::ptrdiff_t(p)),
                  .max_tokens = 1, .return_logits = true};
  r.sampling.temperature = 0;
  auto engine = Engine::Create(m, OfflineEngineOptions(m, {r}, {.kv = {.dtype = DType::kF32}, .enable_prefix_cache = false}));
  EXPECT_TRUE(engine.ok());
  auto done = RunToCompletion(**engine, {r});
  EXPECT_TRUE(done.ok()) << done.status().message();
  const std::vector<float>& row = (*done)[0].tokens[0].logits;
  double mx = -INFINITY, z = 0;
  for (float v : row) mx = std::max(mx, double(v));
  for (float v : row) z += std::exp(double(v) - mx);
  const int32_t id = prompt[p];
  Expected e{.logprob = double(row[size_t(id)]) - mx - std::log(z), .rank = 1};
  for (float v : row) e.rank += v > row[size_t(id)];
  std::vector<int32_t> order(row.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[size_t(a)] > row[size_t(b)]; });
  e.top.assign(order.begin(), order.begin() + k);
  return e;
}

void ExpectMatches(Model& m, const std::vector<int32_t>& prompt, int64_t start, const std::vector<TokenOutput>& got,
                   int k) {
  ASSERT_EQ(int64_t(got.size()), int64_t(prompt.size()) - start);
  for (size_t i = 0; i < got.size(); ++i) {
    const size_t p = size_t(start) + i;
    const Expected e = FromPrefix(m, prompt, p, k);
    EXPECT_EQ(got[i].id, prompt[p]) << p;
    // Prefill chunks of other shapes sum in another order: f32 rounding only.
    EXPECT_NEAR(got[i].logprob, e.logprob, 1e-4) << p;
    EXPECT_EQ(got[i].rank, e.rank) << p;
    ASSERT_EQ(got[i].top.size(), size_t(k)) << p;
    EXPECT_EQ(got[i].top[0].first, e.top[0]) << p;
  }
}

TEST_F(PromptLogprobsTest, EveryPositionUnderChunkedPrefill) {
  auto m = Load();
  const std::vector<int32_t> prompt = Prompt(23);
  EngineRequest r{.id = "p", .prompt = prompt, .max_tokens = 2, .top_logprobs = 3, .prompt_logprob_start = 0};
  r.sampling.temperature = 0;
  for (int64_t chunk : {int64_t(512), int64_t(5)}) {
    auto engine = Engine::Create(*m, OfflineEngineOptions(*m, {r}, {.chunked_prefill_size = chunk,
                                                                    .kv = {.block_size = 4, .dtype = DType::kF32}}));
    ASSERT_TRUE(engine.ok());
    auto done = RunToCompletion(**engine, {r});
    ASSERT_TRUE(done.ok()) << done.status().message();
    ExpectMatches(*m, prompt, 1, (*done)[0].prompt_logprobs, 3);  // position 0 has no logprob
    EXPECT_EQ((*done)[0].tokens.size(), 2u);
  }
}

TEST_F(PromptLogprobsTest, CachedPrefixIsNotReusedPastTheStart) {
  auto m = Load();
  const std::vector<int32_t> prompt = Prompt(30);
  auto engine = Engine::Create(*m, {.kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}});
  ASSERT_TRUE(engine.ok());
  EngineRequest warm{.id = "warm", .prompt = prompt, .max_tokens = 1};
  warm.sampling.temperature = 0;
  ASSERT_TRUE(RunToCompletion(**engine, {warm}).ok());
  // The whole prompt is cached now; scoring from position 13 may reuse at most 12 positions (3 pages of 4).
  EngineRequest r{.id = "r", .prompt = prompt, .max_tokens = 1, .top_logprobs = 2, .prompt_logprob_start = 13};
  r.sampling.temperature = 0;
  SubmitResult sub = (*engine)->Submit(r);
  ASSERT_TRUE(sub.stream);
  std::vector<TokenOutput> got;
  RequestUpdate u;
  for (int guard = 0; guard < 1000 && !u.finished; ++guard) {
    if (!sub.stream->Next(u, std::chrono::milliseconds(5000))) break;
    for (auto& t : u.prompt_logprobs) got.push_back(t);
  }
  ASSERT_TRUE(u.finished);
  EXPECT_EQ(u.cached_tokens, 12);
  ExpectMatches(*m, prompt, 13, got, 2);
}

TEST_F(PromptLogprobsTest, GroupScoresOnceAndMaxTokensZeroOnlyPrefills) {
  auto m = Load();
  const std::vector<int32_t> prompt = Prompt(12);
  auto engine = Engine::Create(*m, {.kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}});
  ASSERT_TRUE(engine.ok());
  std::vector<EngineRequest> group;
  for (int i = 0; i < 3; ++i) {
    EngineRequest r{.id = "g", .prompt = prompt, .max_tokens = 0, .top_logprobs = 1, .prompt_logprob_start = 1};
    r.sampling.temperature = 0;
    group.push_back(r);
  }
  SubmitGroupResult sub = (*engine)->SubmitGroup(group);
  ASSERT_EQ(sub.streams.size(), 3u);
  // Every choice drained before the reference runs: FromPrefix runs engines
  // of its own on the same model, which no two engines may run at once (the
  // followers are still being served while the first choice's stream ends).
  std::vector<TokenOutput> first;
  for (size_t i = 0; i < 3; ++i) {
    std::vector<TokenOutput> got;
    size_t tokens = 0;
    RequestUpdate u;
    for (int guard = 0; guard < 1000 && !u.finished; ++guard) {
      if (!sub.streams[i]->Next(u, std::chrono::milliseconds(5000))) break;
      for (auto& t : u.prompt_logprobs) got.push_back(t);
      tokens += u.tokens.size();
    }
    ASSERT_TRUE(u.finished);
    EXPECT_EQ(u.reason, FinishReason::kLength);
    EXPECT_EQ(tokens, 0u) << "max_tokens 0 generates nothing";
    if (i == 0) first = got;
    else EXPECT_TRUE(got.empty()) << "only the first choice scores the prompt";
  }
  ExpectMatches(*m, prompt, 1, first, 1);
}

// Without the prefix cache too, the other choices wait for the first to
// score the prompt: scored from late in the prompt, the first choice's first
// chunk ends where the scores start, and the budget it leaves let another
// choice compute its whole prompt and finish in that step, before any score
// was out (a streamed /generate then sent it incomplete prompt logprobs).
TEST_F(PromptLogprobsTest, GroupChoicesFinishAfterThePromptIsScoredWithoutTheCache) {
  auto m = Load();
  const std::vector<int32_t> prompt = Prompt(24);
  auto engine = Engine::Create(*m, {.chunked_prefill_size = 64,
                                    .kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32},
                                    .enable_prefix_cache = false});
  ASSERT_TRUE(engine.ok());
  std::vector<EngineRequest> group;
  for (int i = 0; i < 3; ++i) {
    EngineRequest r{.id = "g", .prompt = prompt, .max_tokens = 1, .top_logprobs = 1, .prompt_logprob_start = 20};
    r.sampling.temperature = 0;
    group.push_back(r);
  }
  SubmitGroupResult sub = (*engine)->SubmitGroup(group);
  ASSERT_EQ(sub.streams.size(), 3u);
  // Each choice's one token, stamped with the end of the step that made it;
  // the first choice's comes from the step that scored the prompt's end.
  std::vector<TokenOutput> token(3);
  size_t scored = 0;
  for (size_t i = 0; i < 3; ++i) {
    RequestUpdate u;
    for (int guard = 0; guard < 100 && !u.finished; ++guard) {
      if (!sub.streams[i]->Next(u, std::chrono::milliseconds(5000))) break;
      if (!u.tokens.empty()) token[i] = u.tokens[0];
      if (i == 0) scored += u.prompt_logprobs.size();
    }
    ASSERT_TRUE(u.finished);
  }
  EXPECT_EQ(scored, 4u) << "positions 20 .. 23";
  for (size_t i = 1; i < 3; ++i)
    EXPECT_GT(token[i].time, token[0].time) << "choice " << i << " ran before the prompt was scored";
}

}  // namespace
}  // namespace tern
