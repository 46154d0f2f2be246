// Continuous batching must not change results: every request's greedy tokens
// under the engine (mixed batches, chunked prefill, retraction when the KV pool
// runs dry) equal those of the same request run alone with Generate.
#include "engine/engine.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "engine/generate.h"
#include "model/synth_checkpoint.h"

namespace tern {
namespace {

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "/engine_test_model";
    std::filesystem::remove_all(dir_);
    SynthPreset p{.name = "t", .arch = "qwen3_moe", .hidden = 32, .layers = 2, .heads = 4, .kv_heads = 2,
                  .head_dim = 8, .ffn = 48, .vocab = 96, .tied = false, .experts = 4, .experts_per_tok = 2,
                  .moe_ffn = 16, .max_positions = 256};
    ASSERT_TRUE(WriteSyntheticWeights(dir_, {.preset = p, .vocab = 96, .dtype = DType::kF32, .seed = 3,
                                             .bos_token_id = 1, .eos_token_id = 2}).ok());
  }
  static std::unique_ptr<Model> Load() {
    auto m = LoadModel(dir_, {.threads = 2});
    EXPECT_TRUE(m.ok()) << m.status().message();
    return std::move(*m);
  }
  // Greedy tokens of one request run alone.
  static std::vector<int32_t> Alone(Model& m, const std::vector<int32_t>& prompt, int64_t n) {
    KvCacheOptions o{.block_size = 4, .num_blocks = 64, .dtype = DType::kF32};
    auto cache = KvCache::Create(m.cache_spec(), o);
    BlockAllocator alloc(o.num_blocks);
    GenerateRequest r;
    r.prompt = prompt;
    r.max_tokens = n;
    r.sampling.temperature = 0;
    auto res = Generate(m, **cache, alloc, r, nullptr);
    EXPECT_TRUE(res.ok());
    return res->tokens;
  }
  static std::vector<int32_t> Collect(RequestStream& s, RequestUpdate* last = nullptr) {
    std::vector<int32_t> out;
    RequestUpdate u;
    for (int guard = 0; guard < 10000; ++guard) {
      if (!s.Next(u, std::chrono::milliseconds(5000))) break;
      for (auto& t : u.tokens) out.push_back(t.id);
      if (u.finished) break;
    }
    if (last) *last = u;
    return out;
  }
  static std::string dir_;
};
std::string EngineTest::dir_;

std::vector<int32_t> Prompt(int seed, int len) {
  std::vector<int32_t> p;
  for (int i = 0; i < len; ++i) p.push_back(3 + (seed * 31 + i * 7) % 90);
  return p;
}

TEST_F(EngineTest, BatchedEqualsAloneWithChunkedPrefillAndRetraction) {
  auto model = Load();
  const int kRequests = 6;
  std::vector<std::vector<int32_t>> expected;
  for (int r = 0; r < kRequests; ++r) expected.push_back(Alone(*model, Prompt(r, 5 + 7 * r), 12));
  // A small pool (16 blocks of 4 tokens) cannot hold all six at once: forces waiting and retraction.
  EngineOptions o{.max_running_requests = 8, .chunked_prefill_size = 9,
                  .kv = {.block_size = 4, .num_blocks = 16, .dtype = DType::kF32}};
  auto engine = Engine::Create(*model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int r = 0; r < kRequests; ++r) {
    EngineRequest req{.id = std::to_string(r), .prompt = Prompt(r, 5 + 7 * r), .max_tokens = 12};
    req.sampling.temperature = 0;
    auto sub = (*engine)->Submit(req);
    ASSERT_TRUE(sub.stream) << sub.error;
    streams.push_back(sub.stream);
  }
  for (int r = 0; r < kRequests; ++r) {
    RequestUpdate last;
    EXPECT_EQ(Collect(*streams[size_t(r)], &last), expected[size_t(r)]) << "request " << r;
    EXPECT_EQ(last.reason, FinishReason::kLength);
    EXPECT_EQ(last.completion_tokens, 12);
  }
  EXPECT_GT((*engine)->metrics().retractions_total.load(), 0u) << "the test meant to exercise retraction";
  // Every block is back.
  for (int i = 0; i < 100 && (*engine)->metrics().used_blocks.load() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ((*engine)->metrics().used_blocks.load(), 0);
}

TEST_F(EngineTest, AbortFreesBlocksAndErrorsAreReported) {
  auto model = Load();
  EngineOptions o{.max_running_requests = 2, .max_queued_requests = 1, .chunked_prefill_size = 64,
                  .kv = {.block_size = 4, .num_blocks = 32, .dtype = DType::kF32}};
  auto engine = Engine::Create(*model, o);
  ASSERT_TRUE(engine.ok());
  EngineRequest long_req{.id = "a", .prompt = Prompt(1, 8), .max_tokens = 100};
  long_req.sampling.temperature = 0;
  auto a = (*engine)->Submit(long_req);
  ASSERT_TRUE(a.stream);
  RequestUpdate u;
  ASSERT_TRUE(a.stream->Next(u, std::chrono::milliseconds(5000)));
  a.stream->Abort();
  Collect(*a.stream, &u);
  EXPECT_TRUE(u.finished);
  EXPECT_EQ(u.reason, FinishReason::kAbort);
  for (int i = 0; i < 200 && (*engine)->metrics().used_blocks.load() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ((*engine)->metrics().used_blocks.load(), 0);

  EngineRequest too_long{.id = "b", .prompt = Prompt(2, 256), .max_tokens = 1};
  auto b = (*engine)->Submit(too_long);
  EXPECT_FALSE(b.stream);
  EXPECT_EQ(b.http_status, 400);
  EXPECT_NE(b.error.find("longer than the model's context length (256 tokens)"), std::string::npos) << b.error;

  EngineRequest stop_req{.id = "c", .prompt = Prompt(3, 4), .max_tokens = 50};
  stop_req.sampling.temperature = 0;
  const auto alone = Alone(*model, Prompt(3, 4), 5);
  stop_req.stop_token_ids = {alone[2]};
  auto c = (*engine)->Submit(stop_req);
  ASSERT_TRUE(c.stream);
  auto got = Collect(*c.stream, &u);
  EXPECT_EQ(u.reason, FinishReason::kStop);
  EXPECT_EQ(u.matched_stop_token, alone[2]);
  EXPECT_EQ(got.back(), alone[2]);
  EXPECT_LE(got.size(), 3u);

  (*engine)->Drain(std::chrono::milliseconds(2000));
  auto d = (*engine)->Submit(stop_req);
  EXPECT_EQ(d.http_status, 503);
}

TEST_F(EngineTest, QueueFullIs503) {
  auto model = Load();
  EngineOptions o{.max_running_requests = 1, .max_queued_requests = 1, .chunked_prefill_size = 64,
                  .kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}};
  auto engine = Engine::Create(*model, o);
  ASSERT_TRUE(engine.ok());
  EngineRequest r{.id = "x", .prompt = Prompt(1, 8), .max_tokens = 200};
  std::vector<SubmitResult> subs;
  for (int i = 0; i < 4; ++i) subs.push_back((*engine)->Submit(r));
  int rejected = 0;
  for (auto& s : subs) {
    if (!s.stream) {
      EXPECT_EQ(s.http_status, 503);
      EXPECT_EQ(s.error, "The request queue is full.");
      ++rejected;
    }
  }
  EXPECT_GE(rejected, 1);
  (*engine)->AbortAll();
  for (auto& s : subs)
    if (s.stream) Collect(*s.stream);
}

}  // namespace
}  // namespace tern
