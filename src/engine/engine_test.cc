// Continuous batching must not change results: every request's greedy tokens
// under the engine (mixed batches, chunked prefill, retraction when the KV pool
// runs dry) equal those of the same request run alone in an engine of its own
// (the integration tests hold that one against the float64 reference). Neither
// may the prefix cache: a request served partly from cached KV gives the same
// tokens and logprobs as the engine with the cache disabled.
#include "engine/engine.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "engine/engine_test_util.h"

namespace tern {
namespace {

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "/engine_test_model";
    testing::WriteTinyMoe(dir_);
  }
  static std::unique_ptr<Model> Load() {
    auto m = LoadModel(dir_, {.threads = 2});
    EXPECT_TRUE(m.ok()) << m.status().message();
    return std::move(*m);
  }
  static std::vector<int32_t> Alone(Model& m, const std::vector<int32_t>& prompt, int64_t n) {
    return testing::Alone(m, prompt, n);
  }
  static std::vector<int32_t> Collect(RequestStream& s, RequestUpdate* last = nullptr) {
    return testing::Collect(s, last);
  }
  using Outcome = testing::Outcome;
  static Outcome CollectOutcome(RequestStream& s) { return testing::DrainOutcome(s); }
  static EngineRequest Greedy(std::string id, std::vector<int32_t> prompt, int64_t n) {
    return testing::GreedyRequest(std::move(id), std::move(prompt), n);
  }
  static void WaitFor(const std::atomic<int64_t>& v, int64_t want) { testing::WaitFor(v, want); }
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
  // Queued at once, so the schedule (and the retraction) does not depend on thread timing.
  std::vector<EngineRequest> reqs;
  for (int r = 0; r < kRequests; ++r) reqs.push_back(Greedy(std::to_string(r), Prompt(r, 5 + 7 * r), 12));
  auto sub = (*engine)->SubmitBatch(std::move(reqs));
  ASSERT_EQ(sub.streams.size(), size_t(kRequests)) << sub.error;
  const auto& streams = sub.streams;
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

// The context length is what a sequence may reach, so the model must accept
// every position up to it: an engine asked for more than the model accepts is
// refused at creation (a reply would otherwise fail at the model's limit, as
// `tern serve --context-length` past max_position_embeddings once did), a reply
// told to run past the context ends at it with "length", and a model loaded
// with its limit raised (`tern serve` under SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN)
// serves the longer context to its end. A KV pool smaller than the context
// caps a sequence likewise.
TEST_F(EngineTest, TheContextLengthIsWithinThePositionsTheModelAccepts) {
  auto model = Load();  // max_position_embeddings 256
  ASSERT_EQ(model->max_positions(), 256);
  EngineOptions o{.max_running_requests = 2, .chunked_prefill_size = 64, .context_length = 300,
                  .kv = {.block_size = 4, .num_blocks = 100, .dtype = DType::kF32}};
  auto refused = Engine::Create(*model, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("context length 300 is longer than the model accepts (256 positions)"),
            std::string::npos)
      << refused.status().message();
  auto run = [&](Model& m, int64_t context) {
    o.context_length = context;
    auto engine = Engine::Create(m, o);
    EXPECT_TRUE(engine.ok()) << engine.status().message();
    auto sub = (*engine)->Submit(Greedy("long", Prompt(1, 10), 400));
    EXPECT_TRUE(sub.stream) << sub.error;
    RequestUpdate last;
    const size_t n = Collect(*sub.stream, &last).size();
    EXPECT_EQ(last.reason, FinishReason::kLength) << last.message;
    EXPECT_EQ(last.completion_tokens, int64_t(n));
    return n;
  };
  EXPECT_EQ(run(*model, 0), 246u);  // 10 prompt tokens + 246 = the model's 256 positions
  auto longer = LoadModel(dir_, {.threads = 2, .max_positions = 300});
  ASSERT_TRUE(longer.ok()) << longer.status().message();
  EXPECT_EQ((*longer)->max_positions(), 300);
  EXPECT_EQ(run(**longer, 300), 290u);
  // A KV pool smaller than the context bounds a sequence the same way: the reply ends with "length"
  // where the pool is full (16 blocks of 4 tokens), never with "The KV cache is exhausted".
  o.kv.num_blocks = 16;
  EXPECT_EQ(run(*model, 0), 54u);
}

using testing::ExpectLogprobs;

// Prompts that share whole blocks, part of a block, or a previous request's
// prompt and output (a later chat turn), served one after the other so each
// can hit what the earlier ones left in the cache. With one token per forward
// (chunked_prefill_size 1) both engines run the same arithmetic for every
// position, so reusing cached KV must change nothing, bit for bit. With
// larger chunks the engine without the cache computes the shared positions
// in differently shaped batches, and the kernels' results for a row depend
// on the batch's row count in the last bits; tokens must still agree.
class PrefixCacheExactness : public EngineTest, public ::testing::WithParamInterface<int64_t> {};

TEST_P(PrefixCacheExactness, SameTokensAndLogprobsAsNoCache) {
  const int64_t chunk = GetParam();
  auto model = Load();
  const std::vector<int32_t> base = Prompt(1, 22);
  auto run = [&](bool cache, std::vector<std::vector<int32_t>> prompts) {
    EngineOptions o{.max_running_requests = 8, .chunked_prefill_size = chunk,
                    .kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}, .enable_prefix_cache = cache};
    auto engine = Engine::Create(*model, o);
    EXPECT_TRUE(engine.ok());
    EXPECT_EQ((*engine)->prefix_cache_enabled(), cache);
    std::vector<Outcome> out;
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto sub = (*engine)->Submit(Greedy(std::to_string(i), prompts[i], 12));
      EXPECT_TRUE(sub.stream) << sub.error;
      out.push_back(CollectOutcome(*sub.stream));
    }
    return out;
  };
  // The continuation of `base` under greedy decoding, for the "next turn" prompt.
  const std::vector<int32_t> cont = Alone(*model, base, 12);
  std::vector<int32_t> shares13(base.begin(), base.begin() + 13), shares6(base.begin(), base.begin() + 6);
  for (int i = 0; i < 9; ++i) shares13.push_back(3 + (i * 11) % 80);
  for (int i = 0; i < 9; ++i) shares6.push_back(5 + (i * 13) % 80);
  std::vector<int32_t> next_turn = base;
  next_turn.insert(next_turn.end(), cont.begin(), cont.begin() + 5);
  next_turn.push_back(9);
  const std::vector<std::vector<int32_t>> prompts = {base, shares13, next_turn, shares6, base};
  const auto with = run(true, prompts), without = run(false, prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(with[i].tokens, without[i].tokens) << "prompt " << i;
    ExpectLogprobs(with[i].logprobs, without[i].logprobs, chunk == 1 ? 0.0f : 1e-4f, "prompt " + std::to_string(i));
    EXPECT_EQ(without[i].last.cached_tokens, 0);
  }
  EXPECT_EQ(with[0].tokens, cont);
  // Whole blocks of 4 only, and never the prompt's last token.
  EXPECT_EQ(with[0].last.cached_tokens, 0);
  EXPECT_EQ(with[1].last.cached_tokens, 12);  // 13 shared tokens: 3 whole blocks
  EXPECT_EQ(with[2].last.cached_tokens, 24);  // base + 5 of its output were cached: 27 tokens, 6 blocks
  EXPECT_EQ(with[3].last.cached_tokens, 4);
  EXPECT_EQ(with[4].last.cached_tokens, 20);  // 22 tokens: the 6th block holds the last, so 5
}

INSTANTIATE_TEST_SUITE_P(Chunks, PrefixCacheExactness, ::testing::Values(int64_t(1), int64_t(7)));

// Many requests sharing a prefix in a pool too small for all of them: waiting,
// retraction and eviction happen while blocks are shared.
TEST_F(EngineTest, PrefixCacheWithRetractionAndEvictionMatchesNoCache) {
  auto model = Load();
  const int kRequests = 6;
  std::vector<std::vector<int32_t>> prompts;
  for (int r = 0; r < kRequests; ++r) {
    std::vector<int32_t> p = Prompt(7, 9);  // 9 shared tokens: 2 whole blocks + 1
    const auto tail = Prompt(r, 3 + 5 * r);
    p.insert(p.end(), tail.begin(), tail.end());
    prompts.push_back(p);
  }
  auto run = [&](bool cache, uint64_t* retractions) {
    EngineOptions o{.max_running_requests = 8, .chunked_prefill_size = 9,
                    .kv = {.block_size = 4, .num_blocks = 16, .dtype = DType::kF32}, .enable_prefix_cache = cache};
    auto engine = Engine::Create(*model, o);
    EXPECT_TRUE(engine.ok());
    std::vector<EngineRequest> reqs;
    for (int r = 0; r < kRequests; ++r) reqs.push_back(Greedy(std::to_string(r), prompts[size_t(r)], 12));
    auto sub = (*engine)->SubmitBatch(std::move(reqs));
    EXPECT_EQ(sub.streams.size(), size_t(kRequests)) << sub.error;
    std::vector<Outcome> out;
    for (auto& s : sub.streams) out.push_back(CollectOutcome(*s));
    *retractions = (*engine)->metrics().retractions_total.load();
    const EngineMetrics& m = (*engine)->metrics();
    WaitFor(m.used_blocks, 0);
    EXPECT_EQ(m.used_blocks.load(), 0) << "every block a request held is back";
    EXPECT_EQ(m.used_blocks.load() + m.cached_blocks.load() + m.free_blocks.load(), 16);
    if (cache) {
      EXPECT_GT(m.cached_blocks.load(), 0);
    }
    EXPECT_TRUE((*engine)->FlushCache());
    EXPECT_EQ(m.free_blocks.load(), 16) << "flushing gives every cached block back";
    EXPECT_EQ(m.cached_blocks.load(), 0);
    return out;
  };
  uint64_t r_with = 0, r_without = 0;
  const auto with = run(true, &r_with), without = run(false, &r_without);
  for (int r = 0; r < kRequests; ++r) {
    EXPECT_EQ(with[size_t(r)].tokens, without[size_t(r)].tokens) << "request " << r;
    // Batches differ in shape between the two runs: last-bit differences only (see above).
    ExpectLogprobs(with[size_t(r)].logprobs, without[size_t(r)].logprobs, 1e-4f, "request " + std::to_string(r));
    EXPECT_EQ(with[size_t(r)].last.reason, FinishReason::kLength) << with[size_t(r)].last.message;
    EXPECT_EQ(with[size_t(r)].tokens, Alone(*model, prompts[size_t(r)], 12)) << "request " << r;
  }
  EXPECT_GT(r_with, 0u) << "the test meant to exercise retraction with the cache";
  EXPECT_GT(r_without, 0u);
}

// n > 1: one prompt computed once, every choice its own sequence.
TEST_F(EngineTest, GroupComputesThePromptOnceAndEachChoiceDecodes) {
  auto model = Load();
  const std::vector<int32_t> prompt = Prompt(4, 15);
  const std::vector<int32_t> alone = Alone(*model, prompt, 10);
  for (bool cache : {true, false}) {
    EngineOptions o{.max_running_requests = 8, .chunked_prefill_size = 64,
                    .kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}, .enable_prefix_cache = cache};
    auto engine = Engine::Create(*model, o);
    ASSERT_TRUE(engine.ok());
    std::vector<EngineRequest> reqs;
    for (int i = 0; i < 3; ++i) reqs.push_back(Greedy("g" + std::to_string(i), prompt, 10));
    // A sampled group: the choices differ by seed but all finish.
    std::vector<EngineRequest> sampled;
    for (int i = 0; i < 3; ++i) {
      EngineRequest r{.id = "s" + std::to_string(i), .prompt = prompt, .max_tokens = 6};
      r.sampling.temperature = 1.0;
      r.sampling.seed = 100 + i;
      sampled.push_back(r);
    }
    auto g = (*engine)->SubmitGroup(reqs);
    auto h = (*engine)->SubmitGroup(sampled);
    ASSERT_EQ(g.streams.size(), 3u) << g.error;
    ASSERT_EQ(h.streams.size(), 3u) << h.error;
    EXPECT_EQ(g.streams[0]->notifier(), g.streams[2]->notifier());
    for (int i = 0; i < 3; ++i) {
      Outcome out = CollectOutcome(*g.streams[size_t(i)]);
      EXPECT_EQ(out.tokens, alone) << "choice " << i;
      // The leader computes the prompt; the others find its 3 whole blocks of 4 (15 tokens) cached.
      EXPECT_EQ(out.last.cached_tokens, cache && i > 0 ? 12 : 0) << "choice " << i;
      EXPECT_EQ(CollectOutcome(*h.streams[size_t(i)]).tokens.size(), 6u);
    }
  }
}

TEST_F(EngineTest, FlushCacheOnlyWhenIdle) {
  auto model = Load();
  EngineOptions o{.max_running_requests = 2, .chunked_prefill_size = 64,
                  .kv = {.block_size = 4, .num_blocks = 128, .dtype = DType::kF32}};
  auto engine = Engine::Create(*model, o);
  ASSERT_TRUE(engine.ok());
  // Enough queued work (40 x 200 tokens, two at a time) that the engine is surely busy.
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 40; ++i) {
    auto sub = (*engine)->Submit(Greedy(std::to_string(i), Prompt(i, 10), 200));
    ASSERT_TRUE(sub.stream);
    streams.push_back(sub.stream);
  }
  RequestUpdate u;
  ASSERT_TRUE(streams[0]->Next(u, std::chrono::milliseconds(5000)));
  EXPECT_FALSE((*engine)->FlushCache());  // requests are running and waiting
  (*engine)->AbortAll();
  for (auto& s : streams) CollectOutcome(*s);
  WaitFor((*engine)->metrics().running, 0);
  EXPECT_GT((*engine)->metrics().cached_blocks.load(), 0);
  EXPECT_TRUE((*engine)->FlushCache());
  EXPECT_EQ((*engine)->metrics().free_blocks.load(), 128);
  EXPECT_EQ((*engine)->metrics().cached_blocks.load(), 0);
}

TEST_F(EngineTest, AbortFreesBlocksAndErrorsAreReported) {
  auto model = Load();
  // A pool that holds the whole reply (62 blocks of 4 for 8 + 240 tokens): one that did not once ended the
  // reply with "KV cache exhausted", an abort of another kind, and this test passed on it.
  EngineOptions o{.max_running_requests = 2, .max_queued_requests = 1, .chunked_prefill_size = 64,
                  .kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}};
  auto engine = Engine::Create(*model, o);
  ASSERT_TRUE(engine.ok());
  EngineRequest long_req{.id = "a", .prompt = Prompt(1, 8), .max_tokens = 240};
  long_req.sampling.temperature = 0;
  RequestUpdate u;
  // The abort races the reply's 240 decode steps (milliseconds on this model): a test thread held off
  // the CPU that long sees the reply end first, so up to 5 tries.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto a = (*engine)->Submit(long_req);
    ASSERT_TRUE(a.stream);
    ASSERT_TRUE(a.stream->Next(u, std::chrono::milliseconds(5000)));
    a.stream->Abort();
    Collect(*a.stream, &u);
    EXPECT_TRUE(u.finished);
    if (u.reason == FinishReason::kAbort) break;
    EXPECT_EQ(u.reason, FinishReason::kLength);
    EXPECT_EQ(u.completion_tokens, 240);
  }
  EXPECT_EQ(u.reason, FinishReason::kAbort);
  EXPECT_EQ(u.error, EngineError::kNone) << u.message;  // the caller's abort, not the engine's
  for (int i = 0; i < 200 && (*engine)->metrics().used_blocks.load() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ((*engine)->metrics().used_blocks.load(), 0);

  EngineRequest too_long{.id = "b", .prompt = Prompt(2, 256), .max_tokens = 1};
  auto b = (*engine)->Submit(too_long);
  EXPECT_FALSE(b.stream);
  EXPECT_EQ(b.error_kind, EngineError::kTooLong);
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
  EXPECT_EQ(d.error_kind, EngineError::kDraining);
}

// A batch is all or none: a bad request is named by its index and nothing of
// the batch runs; a good batch's requests are independent (each scores its own
// prompt).
TEST_F(EngineTest, SubmitBatchIsAllOrNone) {
  auto model = Load();
  std::vector<std::vector<int32_t>> expected;  // before the engine runs: one engine on the model at a time
  for (int r = 0; r < 3; ++r) expected.push_back(Alone(*model, Prompt(r, 6 + r), 4));
  EngineOptions o{.max_running_requests = 4, .chunked_prefill_size = 64,
                  .kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}};
  auto engine = Engine::Create(*model, o);
  ASSERT_TRUE(engine.ok());
  std::vector<EngineRequest> bad;
  bad.push_back(Greedy("ok", Prompt(1, 6), 3));
  bad.push_back(Greedy("oov", {5, 96, 7}, 3));  // vocab is 96
  auto b = (*engine)->SubmitBatch(std::move(bad));
  EXPECT_TRUE(b.streams.empty());
  EXPECT_EQ(b.error_kind, EngineError::kInvalidInput);
  EXPECT_EQ(b.error.rfind("Request 1: ", 0), 0u) << b.error;
  EXPECT_EQ((*engine)->metrics().requests_total.load(), 0u) << "nothing of a refused batch is queued";

  std::vector<EngineRequest> good;
  for (int r = 0; r < 3; ++r) {
    good.push_back(Greedy(std::to_string(r), Prompt(r, 6 + r), 4));
    good.back().prompt_logprob_start = 1;
  }
  auto g = (*engine)->SubmitBatch(good);
  ASSERT_EQ(g.streams.size(), 3u) << g.error;
  for (int r = 0; r < 3; ++r) {
    size_t prompt_lps = 0;
    std::vector<int32_t> ids;
    for (;;) {
      RequestUpdate u;
      if (!g.streams[size_t(r)]->Next(u, std::chrono::milliseconds(5000))) break;
      prompt_lps += u.prompt_logprobs.size();
      for (const TokenOutput& t : u.tokens) ids.push_back(t.id);
      if (u.finished) break;
    }
    EXPECT_EQ(ids, expected[size_t(r)]) << "request " << r;
    EXPECT_EQ(prompt_lps, size_t(6 + r - 1)) << "request " << r << " scores its own prompt";
  }
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
      EXPECT_EQ(s.error_kind, EngineError::kQueueFull);
      EXPECT_EQ(s.error, "The request queue is full.");
      ++rejected;
    }
  }
  EXPECT_GE(rejected, 1);
  (*engine)->AbortAll();
  for (auto& s : subs)
    if (s.stream) Collect(*s.stream);
}

// n above what the queue ever takes: 400 at once (a 503 would be retried
// forever), even on an idle server; n up to it is served.
TEST_F(EngineTest, MoreSequencesThanTheQueueTakesIs400) {
  auto model = Load();
  EngineOptions o{.max_running_requests = 4, .max_queued_requests = 2, .chunked_prefill_size = 64,
                  .kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}};
  auto engine = Engine::Create(*model, o);
  ASSERT_TRUE(engine.ok());
  std::vector<EngineRequest> three(3, EngineRequest{.id = "x", .prompt = Prompt(1, 8), .max_tokens = 2});
  auto g = (*engine)->SubmitGroup(three);
  EXPECT_TRUE(g.streams.empty());
  EXPECT_EQ(g.error_kind, EngineError::kInvalidInput);
  EXPECT_EQ(g.error,
            "The request asks for 3 sequences at once (n or a batch); the server queues at most 2 "
            "(--max-queued-requests).");
  three.pop_back();
  auto ok = (*engine)->SubmitGroup(three);
  ASSERT_EQ(ok.streams.size(), 2u) << ok.error;
  for (auto& s : ok.streams) EXPECT_EQ(Collect(*s).size(), 2u);
}

}  // namespace
}  // namespace tern
