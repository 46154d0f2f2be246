// The prefix cache on a hybrid model (Qwen3.5: Gated DeltaNet layers whose
// recurrent state is part of every sequence's context). A cached prefix is
// reused only where the cache also holds a snapshot of the recurrent state
// after it: the prompt's last whole block before its last token, and the last
// block boundary a finished sequence reached (prompt + reply, for the next
// chat turn). Whatever the cache serves must change nothing: tokens and
// logprobs equal those of the engine with the cache off, and each request's
// greedy tokens those of the request run alone.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/engine_test_util.h"

namespace tern {
namespace {

constexpr int32_t kBlock = 4;

class HybridCacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "/engine_hybrid_cache_model";
    testing::WriteTinyHybrid(dir_);
  }
  static std::unique_ptr<Model> Load() {
    auto m = LoadModel(dir_, {.threads = 2});
    EXPECT_TRUE(m.ok()) << m.status().message();
    return std::move(*m);
  }
  using Outcome = testing::Outcome;
  static Outcome Drain(RequestStream& s) { return testing::DrainOutcome(s); }
  static EngineRequest Greedy(std::string id, std::vector<int32_t> prompt, int64_t n) {
    return testing::GreedyRequest(std::move(id), std::move(prompt), n);
  }
  static void WaitFor(const std::atomic<int64_t>& v, int64_t want) { testing::WaitFor(v, want); }
  static std::string dir_;
};
std::string HybridCacheTest::dir_;

std::vector<int32_t> Prompt(int seed, int len) {
  std::vector<int32_t> p;
  for (int i = 0; i < len; ++i) p.push_back(3 + (seed * 29 + i * 11) % 90);
  return p;
}

const auto ExpectClose = testing::ExpectLogprobs;

TEST_F(HybridCacheTest, SnapshotsAreKeptInPoolBlocks) {
  auto model = Load();
  ASSERT_GT(model->cache_spec().recurrent_state_bytes, 0);
  EngineOptions o{.max_running_requests = 4, .chunked_prefill_size = 64,
                  .kv = {.block_size = kBlock, .num_blocks = 64, .dtype = DType::kF32}, .enable_prefix_cache = true};
  auto engine = Engine::Create(*model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_TRUE((*engine)->prefix_cache_enabled());
  // One block holds kBlock tokens of K and V for each of the 2 attention layers.
  const int64_t block_bytes = int64_t(kBlock) * 2 * 2 * model->cache_spec().kv_heads * model->cache_spec().head_dim * 4;
  const int64_t state = model->cache_spec().recurrent_state_bytes;
  EXPECT_EQ((*engine)->snapshot_blocks(), (state + block_bytes - 1) / block_bytes);
  // Off, the engine keeps no snapshots.
  o.enable_prefix_cache = false;
  auto off = Engine::Create(*model, o);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE((*off)->prefix_cache_enabled());
  EXPECT_EQ((*off)->snapshot_blocks(), 0);
}

// Requests served one after another (each may hit what the earlier ones
// left). With one token per forward (chunk 1) both engines run the same
// arithmetic at every position, so the reuse must be exact to the bit; with
// chunks of 7 the no-cache engine computes shared positions in other batch
// shapes (and the delta rule chunked rather than step by step): last bits only.
class HybridCacheExactness : public HybridCacheTest, public ::testing::WithParamInterface<int64_t> {};

TEST_P(HybridCacheExactness, SameTokensAndLogprobsAsNoCache) {
  const int64_t chunk = GetParam();
  auto model = Load();
  const std::vector<int32_t> base = Prompt(1, 22);
  const std::vector<int32_t> cont = testing::Alone(*model, base, 12);
  ASSERT_EQ(cont.size(), 12u);
  std::vector<int32_t> shares13(base.begin(), base.begin() + 13);
  for (int i = 0; i < 9; ++i) shares13.push_back(3 + (i * 17) % 80);
  std::vector<int32_t> next_turn = base;  // a chat's next turn after 5 tokens of the reply
  next_turn.insert(next_turn.end(), cont.begin(), cont.begin() + 5);
  next_turn.push_back(9);
  std::vector<int32_t> full_turn = base;  // after the whole reply
  full_turn.insert(full_turn.end(), cont.begin(), cont.end());
  full_turn.insert(full_turn.end(), {9, 10});
  const std::vector<std::vector<int32_t>> prompts = {base, shares13, next_turn, base, full_turn};

  auto run = [&](bool cache, int64_t* snapshots) {
    EngineOptions o{.max_running_requests = 4, .chunked_prefill_size = chunk,
                    .kv = {.block_size = kBlock, .num_blocks = 128, .dtype = DType::kF32},
                    .enable_prefix_cache = cache};
    auto engine = Engine::Create(*model, o);
    EXPECT_TRUE(engine.ok());
    std::vector<Outcome> out;
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto sub = (*engine)->Submit(Greedy(std::to_string(i), prompts[i], 12));
      EXPECT_TRUE(sub.stream) << sub.error;
      out.push_back(Drain(*sub.stream));
    }
    WaitFor((*engine)->metrics().used_blocks, 0);
    *snapshots = (*engine)->metrics().state_snapshots.load();
    return out;
  };
  int64_t snaps_with = 0, snaps_without = 0;
  const auto with = run(true, &snaps_with), without = run(false, &snaps_without);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(with[i].tokens, without[i].tokens) << "prompt " << i;
    EXPECT_EQ(with[i].tokens, testing::Alone(*model, prompts[i], 12)) << "prompt " << i;
    ExpectClose(with[i].logprobs, without[i].logprobs, chunk == 1 ? 0.0f : 1e-4f, "prompt " + std::to_string(i));
    EXPECT_EQ(without[i].last.cached_tokens, 0);
  }
  EXPECT_EQ(with[0].tokens, cont);
  EXPECT_EQ(with[0].last.cached_tokens, 0);
  // 13 shared tokens, but base's snapshots are at 20 (its prompt's last whole
  // block before the last token) and 32 (the last boundary of prompt + reply,
  // 33 tokens computed): no state to resume at 12, so nothing is reused.
  EXPECT_EQ(with[1].last.cached_tokens, 0);
  EXPECT_EQ(with[2].last.cached_tokens, 20);  // 27 tokens match base's path; the snapshot at 32 lies beyond
  EXPECT_EQ(with[3].last.cached_tokens, 20);
  EXPECT_EQ(with[4].last.cached_tokens, 32);  // the whole previous turn
  EXPECT_GE(snaps_with, 3);
  EXPECT_EQ(snaps_without, 0);
}

INSTANTIATE_TEST_SUITE_P(Chunks, HybridCacheExactness, ::testing::Values(int64_t(1), int64_t(7)));

// Many requests sharing a prefix, concurrently, in a pool too small for all of
// them: waiting, retraction and eviction (of KV and of snapshots) happen while
// blocks and snapshots are shared. Then flushing gives every block back.
TEST_F(HybridCacheTest, RetractionAndEvictionMatchNoCache) {
  auto model = Load();
  const int kRequests = 6;
  std::vector<std::vector<int32_t>> prompts;
  for (int r = 0; r < kRequests; ++r) {
    std::vector<int32_t> p = Prompt(7, 13);  // 13 shared tokens: 3 whole blocks + 1
    const auto tail = Prompt(r, 2 + 5 * r);
    p.insert(p.end(), tail.begin(), tail.end());
    prompts.push_back(p);
  }
  constexpr int64_t kPool = 24;
  auto run = [&](bool cache, uint64_t* retractions, int64_t* hits) {
    EngineOptions o{.max_running_requests = 8, .chunked_prefill_size = 9,
                    .kv = {.block_size = kBlock, .num_blocks = kPool, .dtype = DType::kF32},
                    .enable_prefix_cache = cache};
    auto engine = Engine::Create(*model, o);
    EXPECT_TRUE(engine.ok());
    // The first alone (its snapshot at 12 is on the shared path), then the rest at once.
    std::vector<Outcome> out;
    auto first = (*engine)->Submit(Greedy("0", prompts[0], 12));
    EXPECT_TRUE(first.stream) << first.error;
    out.push_back(Drain(*first.stream));
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int r = 1; r < kRequests; ++r) {
      auto sub = (*engine)->Submit(Greedy(std::to_string(r), prompts[size_t(r)], 12));
      EXPECT_TRUE(sub.stream) << sub.error;
      streams.push_back(sub.stream);
    }
    *hits = 0;
    for (auto& s : streams) {
      out.push_back(Drain(*s));
      *hits += out.back().last.cached_tokens;
    }
    *retractions = (*engine)->metrics().retractions_total.load();
    const EngineMetrics& m = (*engine)->metrics();
    WaitFor(m.used_blocks, 0);
    EXPECT_EQ(m.used_blocks.load(), 0) << "every block a request held is back";
    EXPECT_EQ(m.used_blocks.load() + m.cached_blocks.load() + m.free_blocks.load(), kPool);
    EXPECT_TRUE((*engine)->FlushCache());
    EXPECT_EQ(m.free_blocks.load(), kPool) << "flushing gives every cached block and snapshot back";
    EXPECT_EQ(m.state_snapshots.load(), 0);
    return out;
  };
  uint64_t r_with = 0, r_without = 0;
  int64_t hits_with = 0, hits_without = 0;
  const auto with = run(true, &r_with, &hits_with), without = run(false, &r_without, &hits_without);
  for (int r = 0; r < kRequests; ++r) {
    EXPECT_EQ(with[size_t(r)].tokens, without[size_t(r)].tokens) << "request " << r;
    ExpectClose(with[size_t(r)].logprobs, without[size_t(r)].logprobs, 1e-4f, "request " + std::to_string(r));
    EXPECT_EQ(with[size_t(r)].last.reason, FinishReason::kLength) << with[size_t(r)].last.message;
    EXPECT_EQ(with[size_t(r)].tokens, testing::Alone(*model, prompts[size_t(r)], 12)) << "request " << r;
  }
  EXPECT_GT(r_with, 0u) << "the test meant to exercise retraction with the cache";
  EXPECT_GT(hits_with, 0) << "the test meant to reuse cached prefixes";
  EXPECT_EQ(hits_without, 0);
}

// A shared prefix that no earlier request ended in (a system prompt before
// different questions): the first request's snapshots lie past it, so the
// second computes it again, but publishes the state where it leaves the first
// one's path; from the third on, requests resume there.
TEST_F(HybridCacheTest, SharedPrefixGetsASnapshotWhereRequestsBranch) {
  auto model = Load();
  const std::vector<int32_t> system = Prompt(9, 17);  // 4 whole blocks + 1
  std::vector<std::vector<int32_t>> prompts;
  for (int r = 0; r < 4; ++r) {
    std::vector<int32_t> p = system;
    const auto q = Prompt(20 + r, 11 + r);
    p.insert(p.end(), q.begin(), q.end());
    prompts.push_back(p);
  }
  EngineOptions o{.max_running_requests = 4, .chunked_prefill_size = 64,
                  .kv = {.block_size = kBlock, .num_blocks = 128, .dtype = DType::kF32}, .enable_prefix_cache = true};
  auto engine = Engine::Create(*model, o);
  ASSERT_TRUE(engine.ok());
  std::vector<int64_t> cached;
  for (size_t r = 0; r < prompts.size(); ++r) {
    auto sub = (*engine)->Submit(Greedy(std::to_string(r), prompts[r], 6));
    ASSERT_TRUE(sub.stream) << sub.error;
    Outcome out = Drain(*sub.stream);
    EXPECT_EQ(out.tokens, testing::Alone(*model, prompts[r], 6)) << "request " << r;
    cached.push_back(out.last.cached_tokens);
  }
  EXPECT_EQ(cached, (std::vector<int64_t>{0, 0, 16, 16}));
}

// n > 1: the leader computes the prompt and publishes the state at its last
// whole block before the last token; the other choices resume there.
TEST_F(HybridCacheTest, GroupResumesFromTheLeadersSnapshot) {
  auto model = Load();
  const std::vector<int32_t> prompt = Prompt(4, 15);
  const std::vector<int32_t> alone = testing::Alone(*model, prompt, 10);
  for (bool cache : {true, false}) {
    EngineOptions o{.max_running_requests = 8, .chunked_prefill_size = 64,
                    .kv = {.block_size = kBlock, .num_blocks = 64, .dtype = DType::kF32},
                    .enable_prefix_cache = cache};
    auto engine = Engine::Create(*model, o);
    ASSERT_TRUE(engine.ok());
    std::vector<EngineRequest> reqs;
    for (int i = 0; i < 3; ++i) reqs.push_back(Greedy("g" + std::to_string(i), prompt, 10));
    auto g = (*engine)->SubmitGroup(reqs);
    ASSERT_EQ(g.streams.size(), 3u) << g.error;
    for (int i = 0; i < 3; ++i) {
      Outcome out = Drain(*g.streams[size_t(i)]);
      EXPECT_EQ(out.tokens, alone) << "choice " << i << (cache ? " (cache)" : "");
      EXPECT_EQ(out.last.cached_tokens, cache && i > 0 ? 12 : 0) << "choice " << i;
    }
  }
}

// A snapshot on the path a request matches must not be what keeps it out.
// Its blocks held for as long as the request ran: a request that fits the
// empty pool but not beside that snapshot was never admitted (the engine
// spun, everything queued behind it waited); one running alone whose reply
// would fill the pool ended "The KV cache is exhausted". The snapshot is the
// first to go under pressure instead (the request has its state already).
TEST_F(HybridCacheTest, AMatchedSnapshotNeverKeepsARequestOut) {
  auto model = Load();
  EngineOptions probe{.kv = {.block_size = kBlock, .num_blocks = 64, .dtype = DType::kF32}};
  auto p = Engine::Create(*model, probe);
  ASSERT_TRUE(p.ok());
  const int64_t S = (*p)->snapshot_blocks();
  ASSERT_GT(S, 0);
  p->reset();
  const int64_t N = S + 10;  // the pool: 10 blocks more than one snapshot
  // A: 9 tokens, its snapshot at 8 (2 blocks). B and C share those 8.
  const std::vector<int32_t> a = Prompt(5, 2 * kBlock + 1);
  std::vector<int32_t> b(a.begin(), a.begin() + 2 * kBlock), c = b;
  // B fits the empty pool (prompt + 1 in N - S + 1 blocks), not beside A's snapshot.
  while (int64_t(b.size()) < kBlock * (N - S + 1) - 1) b.push_back(3 + int32_t(b.size() * 7 % 80));
  c.insert(c.end(), {41, 42});  // C: a short prompt whose reply may fill the pool
  const std::vector<int32_t> b_alone = testing::Alone(*model, b, 2);
  const std::vector<int32_t> c_alone = testing::Alone(*model, c, kBlock * N - int64_t(c.size()));
  for (bool long_reply : {false, true}) {
    EngineOptions o{.max_running_requests = 4, .chunked_prefill_size = 64,
                    .kv = {.block_size = kBlock, .num_blocks = N, .dtype = DType::kF32}, .enable_prefix_cache = true};
    auto engine = Engine::Create(*model, o);
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    auto sa = (*engine)->Submit(Greedy("a", a, 1));
    ASSERT_TRUE(sa.stream) << sa.error;
    Drain(*sa.stream);
    ASSERT_EQ((*engine)->metrics().state_snapshots.load(), 1);
    const std::vector<int32_t>& prompt = long_reply ? c : b;
    const int64_t max_tokens = long_reply ? kBlock * N : 2;  // (clamped to fill the pool)
    auto sb = (*engine)->Submit(Greedy("b", prompt, max_tokens));
    ASSERT_TRUE(sb.stream) << sb.error;
    const Outcome out = Drain(*sb.stream);
    EXPECT_TRUE(out.last.finished) << "never admitted";
    EXPECT_EQ(out.last.reason, FinishReason::kLength) << out.last.message;
    EXPECT_EQ(out.tokens, long_reply ? c_alone : b_alone);
    EXPECT_EQ(out.last.cached_tokens, 2 * kBlock) << "it resumed from the snapshot";
  }
}

}  // namespace
}  // namespace tern
