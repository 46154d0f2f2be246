// One sequence's failure is that sequence's alone. A bad token id is refused
// at submission (400 naming the index and the bound) instead of failing the
// batch it would have joined; a forward refused because of one chunk fails
// only that chunk's sequence; non-finite logits end their sequence with an
// error that says so (the NaN guard) and are counted; an exception in a step
// fails what was running and the engine goes on serving. In each case the
// other sequences' greedy tokens equal those of the same request run alone
// on the healthy model, in an engine of its own.
#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/engine_test_util.h"

namespace tern {
namespace {

constexpr int32_t kMarker = 77;  // a valid token id that the faulty model reacts to

// Wraps a real model and injects one kind of fault into batches that hold a
// prompt starting with kMarker (its first chunk; generated tokens never count).
class FaultyModel final : public Model {
 public:
  enum class Fault { kNone, kRefuse, kNaN, kInf, kThrow };
  FaultyModel(Model& inner, Fault fault) : inner_(inner), fault_(fault) {}

  Status Forward(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits) override {
    TERN_RETURN_IF_ERROR(CheckBatch(batch, cache));
    if (fault_ == Fault::kThrow && std::any_of(batch.begin(), batch.end(), Marked))
      throw std::runtime_error("injected fault");
    TERN_RETURN_IF_ERROR(inner_.Forward(batch, cache, logits));
    if (fault_ != Fault::kNaN && fault_ != Fault::kInf) return Status::Ok();
    const size_t V = size_t(config().vocab_size);
    size_t row = 0;
    for (const SequenceChunk& c : batch) {
      if (c.skip_logits) continue;
      if (Marked(c)) logits[row * V + 5] = fault_ == Fault::kNaN ? NAN : -INFINITY;
      ++row;
    }
    return Status::Ok();
  }
  Status CheckBatch(std::span<const SequenceChunk> batch, const KvCache& cache) const override {
    if (fault_ == Fault::kRefuse)
      for (const SequenceChunk& c : batch)
        if (Marked(c)) return Status::Error("injected refusal");
    return inner_.CheckBatch(batch, cache);
  }
  const ModelConfig& config() const override { return inner_.config(); }
  CacheSpec cache_spec() const override { return inner_.cache_spec(); }
  int64_t max_positions() const override { return inner_.max_positions(); }
  int64_t WeightBytesPerToken() const override { return inner_.WeightBytesPerToken(); }
  int64_t WeightBytes() const override { return inner_.WeightBytes(); }
  DType weight_dtype() const override { return inner_.weight_dtype(); }
  ThreadPool& pool() override { return inner_.pool(); }

 private:
  static bool Marked(const SequenceChunk& c) { return c.start_pos == 0 && c.tokens[0] == kMarker; }
  Model& inner_;
  Fault fault_;
};

class EngineIsolationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "/engine_isolation_model";
    testing::WriteTinyMoe(dir_);
    auto m = LoadModel(dir_, {.threads = 2});
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(*m).release();
  }
  static void TearDownTestSuite() { delete model_; }

  static std::vector<int32_t> Alone(const std::vector<int32_t>& prompt, int64_t n) {
    return testing::Alone(*model_, prompt, n);
  }
  static std::vector<int32_t> Collect(RequestStream& s, RequestUpdate* last) { return testing::Collect(s, last); }
  static EngineRequest Greedy(std::string id, std::vector<int32_t> prompt, int64_t n) {
    EngineRequest r{.id = std::move(id), .prompt = std::move(prompt), .max_tokens = n};
    r.sampling.temperature = 0;
    return r;
  }
  static std::unique_ptr<Engine> MakeEngine(Model& m) {
    EngineOptions o{.max_running_requests = 4, .chunked_prefill_size = 64,
                    .kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}};
    auto e = Engine::Create(m, o);
    EXPECT_TRUE(e.ok()) << e.status().message();
    return std::move(*e);
  }

  // Runs a good request and a marked one together (both submitted before the
  // first step, so they share batches); the good one must be unaffected.
  struct Pair {
    RequestUpdate good_last, bad_last;
    std::vector<int32_t> good_tokens, bad_tokens;
  };
  static Pair RunPair(Engine& e) {
    const std::vector<int32_t> good = {3, 10, 17, 24, 31, 38};
    const std::vector<int32_t> bad = {kMarker, 4, 11, 18};
    const auto expected = Alone(good, 12);  // (before e runs: one model, one engine at a time)
    auto g = e.Submit(Greedy("good", good, 12));
    auto b = e.Submit(Greedy("bad", bad, 12));
    EXPECT_TRUE(g.stream && b.stream);
    Pair p;
    if (!g.stream || !b.stream) return p;
    p.good_tokens = Collect(*g.stream, &p.good_last);
    p.bad_tokens = Collect(*b.stream, &p.bad_last);
    EXPECT_EQ(p.good_tokens, expected) << "the good request was disturbed";
    EXPECT_EQ(p.good_last.reason, FinishReason::kLength);
    return p;
  }

  static std::string dir_;
  static Model* model_;
};
std::string EngineIsolationTest::dir_;
Model* EngineIsolationTest::model_ = nullptr;

TEST_F(EngineIsolationTest, TokenIdsOutsideTheVocabularyAre400AtSubmission) {
  const std::vector<int32_t> good = {3, 10, 17, 24};
  const auto expected = Alone(good, 10);  // (first: two engines must not run the one model at once)
  auto engine = MakeEngine(*model_);
  auto g = engine->Submit(Greedy("good", good, 10));
  ASSERT_TRUE(g.stream);
  for (int32_t id : {96, -1, 1 << 30}) {
    auto b = engine->Submit(Greedy("bad", {5, 6, id, 7}, 4));
    EXPECT_FALSE(b.stream);
    EXPECT_EQ(b.error_kind, EngineError::kInvalidInput);
    EXPECT_EQ(b.error, fmt::format("Token id {} at index 2 of the input is outside the vocabulary [0, 96).", id));
  }
  // One bad choice of a group refuses the whole group, and nothing is queued.
  std::vector<EngineRequest> group = {Greedy("g0", good, 2), Greedy("g1", {1, 2, 96}, 2)};
  auto gr = engine->SubmitGroup(std::move(group));
  EXPECT_TRUE(gr.streams.empty());
  EXPECT_EQ(gr.error_kind, EngineError::kInvalidInput);
  auto neg = engine->Submit(Greedy("neg", good, -1));
  EXPECT_EQ(neg.error_kind, EngineError::kInvalidInput);
  EXPECT_EQ(neg.error, "max_tokens must be >= 0, got -1.");
  RequestUpdate last;
  EXPECT_EQ(Collect(*g.stream, &last), expected);
  EXPECT_EQ(last.reason, FinishReason::kLength);
  EXPECT_EQ(engine->metrics().engine_errors_total.load(), 0u);
}

TEST_F(EngineIsolationTest, ARefusedChunkFailsOnlyItsSequence) {
  FaultyModel faulty(*model_, FaultyModel::Fault::kRefuse);
  auto engine = MakeEngine(faulty);
  Pair p = RunPair(*engine);
  EXPECT_EQ(p.bad_last.reason, FinishReason::kAbort);
  EXPECT_EQ(p.bad_last.error, EngineError::kInternal);
  EXPECT_EQ(p.bad_last.message, "Internal error: injected refusal");
  EXPECT_TRUE(p.bad_tokens.empty());
  EXPECT_EQ(engine->metrics().engine_errors_total.load(), 1u);
  // (the gauges are refreshed after the step that finished the streams)
  for (int i = 0; i < 200 && engine->metrics().used_blocks.load() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(engine->metrics().used_blocks.load(), 0);
}

// The same under NGRAM speculation, the refused chunk arriving while the
// good request decodes with drafts: its unverified drafts are dropped with
// the batch (it drafts again next step) and its tokens stay its own.
TEST_F(EngineIsolationTest, ARefusedChunkBesideAVerifyFailsOnlyItsSequence) {
  // Every id of the vocabulary (and the first again): NGRAM finds a draft at every step.
  const int32_t V = int32_t(model_->config().vocab_size);
  std::vector<int32_t> good;
  for (int32_t i = 0; i < V; ++i) good.push_back((i * 37 + 11) % V);
  good.push_back(good[0]);
  const auto expected = Alone(good, 100);
  FaultyModel faulty(*model_, FaultyModel::Fault::kRefuse);
  EngineOptions o{.max_running_requests = 4, .chunked_prefill_size = 64,
                  .kv = {.block_size = 4, .num_blocks = 128, .dtype = DType::kF32},
                  .speculative = {.algorithm = SpeculativeAlgorithm::kNgram, .num_draft_tokens = 4,
                                  .adaptive_budget = false}};
  std::atomic<int> drafts{0};
  o.on_drafts = [&](const std::string&, int64_t, std::span<const int32_t>) { drafts++; };
  auto engine = Engine::Create(faulty, o);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto g = (*engine)->Submit(Greedy("good", good, 100));
  ASSERT_TRUE(g.stream);
  RequestUpdate u;
  ASSERT_TRUE(g.stream->Next(u, std::chrono::milliseconds(5000)));  // decoding now
  auto b = (*engine)->Submit(Greedy("bad", {kMarker, 4, 11, 18}, 8));
  ASSERT_TRUE(b.stream);
  RequestUpdate bad_last, good_last;
  EXPECT_TRUE(Collect(*b.stream, &bad_last).empty());
  EXPECT_EQ(bad_last.message, "Internal error: injected refusal");
  std::vector<int32_t> tokens;
  for (const TokenOutput& t : u.tokens) tokens.push_back(t.id);
  const std::vector<int32_t> rest = Collect(*g.stream, &good_last);
  tokens.insert(tokens.end(), rest.begin(), rest.end());
  EXPECT_EQ(tokens, expected) << "the good request was disturbed";
  EXPECT_EQ(good_last.reason, FinishReason::kLength) << good_last.message;
  EXPECT_GT(drafts.load(), 0) << "the test meant to draft";
  EXPECT_EQ((*engine)->metrics().engine_errors_total.load(), 1u);
}

TEST_F(EngineIsolationTest, NonFiniteLogitsEndTheSequenceWithAClearError) {
  const auto expected_later = Alone({8, 9, 10}, 6);
  for (auto fault : {FaultyModel::Fault::kNaN, FaultyModel::Fault::kInf}) {
    FaultyModel faulty(*model_, fault);
    auto engine = MakeEngine(faulty);
    // The prompt's logits row (position 3, its last token) is poisoned.
    Pair p = RunPair(*engine);
    EXPECT_EQ(p.bad_last.reason, FinishReason::kAbort);
    EXPECT_EQ(p.bad_last.error, EngineError::kInternal);
    EXPECT_EQ(p.bad_last.message,
              "The model produced non-finite logits (NaN or Inf) at position 3; generation was stopped.");
    EXPECT_TRUE(p.bad_tokens.empty());
    EXPECT_EQ(engine->metrics().nonfinite_logits_total.load(), 1u);
    // The engine goes on: a new request after the fault is served exactly.
    auto later = engine->Submit(Greedy("later", {8, 9, 10}, 6));
    ASSERT_TRUE(later.stream);
    RequestUpdate last;
    EXPECT_EQ(Collect(*later.stream, &last), expected_later);
  }
}

TEST_F(EngineIsolationTest, AnExceptionInAStepFailsWhatRanAndTheEngineGoesOn) {
  const auto expected_next = Alone({8, 9, 10}, 6);
  FaultyModel faulty(*model_, FaultyModel::Fault::kThrow);
  auto engine = MakeEngine(faulty);
  auto b = engine->Submit(Greedy("bad", {kMarker, 4, 11}, 8));
  ASSERT_TRUE(b.stream);
  RequestUpdate last;
  Collect(*b.stream, &last);
  EXPECT_EQ(last.reason, FinishReason::kAbort);
  EXPECT_EQ(last.error, EngineError::kInternal);
  EXPECT_EQ(last.message, "Internal error in the engine step: injected fault");
  EXPECT_EQ(engine->metrics().engine_errors_total.load(), 1u);
  for (int i = 0; i < 200 && engine->metrics().used_blocks.load() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(engine->metrics().used_blocks.load(), 0);
  // Not a silently stopped engine thread: the next request is served.
  auto next = engine->Submit(Greedy("next", {8, 9, 10}, 6));
  ASSERT_TRUE(next.stream);
  EXPECT_EQ(Collect(*next.stream, &last), expected_next);
  EXPECT_EQ(last.reason, FinishReason::kLength);
}

}  // namespace
}  // namespace tern
