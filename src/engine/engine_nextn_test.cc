// NEXTN drafting (engine_mtp.cc) against a from-scratch computation of the
// same drafts: for every verify, the drafts the engine used after the first
// L tokens of a sequence must equal what the model's MTP head gives when run
// on those L tokens alone, in one chunk with a fresh cache: the main
// model's hidden states over [0, L), the head over rows 0..L-2 (each with
// the token after it), its argmax at the last row, then head steps chained
// on its own output. That holds only if the engine's head KV cache has the
// right entries at every position (prompt chunks, decode steps, accepted and
// rejected drafts, hybrid rollback), its hidden rows are the right ones in
// batches of several sequences, and the chain is positioned right (as far
// as argmax shows it: shifting the chain by one position was not caught, the
// random head's argmax hardly depends on its attention; dropping the head's
// rows for accepted drafts, or for prompt chunks, is). The
// prefix cache is off here: with it, the head's entry at a cached prefix's
// last position may come from another continuation (engine_mtp.cc), which
// only changes drafts. Output exactness under NEXTN is in
// engine_speculative_test (family hybrid_nextn).
#include <algorithm>
#include <bit>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "engine/run_to_completion.h"
#include "model/quantize.h"
#include "model/safetensors.h"

namespace tern {
namespace {

// The drafts an engine used for request `id` after its first `after` tokens (EngineOptions::on_drafts).
struct DraftRecord {
  std::string id;
  int64_t after;
  std::vector<int32_t> drafts;
};

// The drafts the head gives after `tokens` (length L >= 2), `count` of them;
// with `map`, its argmax among those ids only (the first of equal maxima in
// map order), from the whole vocabulary's logits.
std::vector<int32_t> ReferenceDrafts(Model& m, const std::vector<int32_t>& tokens, size_t count,
                                     const std::vector<int32_t>& map = {}) {
  const int64_t L = int64_t(tokens.size()), H = m.config().hidden_size, V = m.config().vocab_size;
  const int64_t block = 16, blocks = (L + int64_t(count) + block) / block;
  auto cache = KvCache::Create(m.cache_spec_with_mtp(), {.block_size = block, .num_blocks = blocks,
                                                          .dtype = DType::kF32, .num_state_slots = 1});
  EXPECT_TRUE(cache.ok()) << cache.status().message();
  if (!cache.ok()) return {};
  std::vector<int32_t> table;
  for (int64_t b = 0; b < blocks; ++b) table.push_back(int32_t(b));
  std::vector<float> logits, hidden, last;
  SequenceChunk c{.tokens = tokens, .start_pos = 0, .block_table = table, .state_slot = 0, .skip_logits = true};
  EXPECT_TRUE(m.ForwardWithHidden({&c, 1}, **cache, logits, hidden).ok());
  // Rows 0..L-2, each with the token after it; the last predicts tokens[L].
  SequenceChunk h{.tokens = std::span<const int32_t>(tokens).subspan(1), .start_pos = 0, .block_table = table};
  EXPECT_TRUE(m.MtpForward({&h, 1}, std::span<const float>(hidden).first(size_t((L - 1) * H)), **cache, logits, 0, &last)
                  .ok());
  std::vector<int32_t> out;
  for (size_t step = 0; step < count; ++step) {
    if (step > 0) {
      SequenceChunk next{.tokens = std::span<const int32_t>(out).subspan(step - 1, 1),
                         .start_pos = L - 2 + int64_t(step), .block_table = table};
      std::vector<float> in = last;
      EXPECT_TRUE(m.MtpForward({&next, 1}, in, **cache, logits, int64_t(step), &last).ok());
    }
    EXPECT_EQ(int64_t(logits.size()), V);
    if (map.empty()) {
      out.push_back(int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    } else {
      int32_t best = map[0];
      for (int32_t id : map)
        if (logits[size_t(id)] > logits[size_t(best)]) best = id;
      out.push_back(best);
    }
  }
  return out;
}

TEST(NextnDrafts, EqualTheHeadRunFromScratch) {
  const std::string dir = ::testing::TempDir() + "/engine_nextn";
  testing::WriteTinyHybridMtp(dir);
  auto model = LoadModel(dir, {.threads = 2});
  ASSERT_TRUE(model.ok()) << model.status().message();
  std::vector<DraftRecord> records;
  EngineOptions o{.max_running_requests = 8, .chunked_prefill_size = 5,
                  .kv = {.block_size = 4, .num_blocks = 128, .dtype = DType::kF32},
                  .enable_prefix_cache = false,
                  .speculative = {.algorithm = SpeculativeAlgorithm::kNextn, .num_draft_tokens = 6, .num_steps = 5,
                                  .adaptive_budget = false}};
  o.on_drafts = [&](const std::string& id, int64_t after, std::span<const int32_t> d) {
    records.push_back({id, after, std::vector<int32_t>(d.begin(), d.end())});
  };
  auto engine = Engine::Create(**model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 8; ++i) {
    EngineRequest r{.id = std::to_string(i), .max_tokens = 24};
    for (int t = 0; t < 7 + 4 * i; ++t) r.prompt.push_back(3 + (i * 29 + t * 17) % 90);
    // Sampled (seeded), so that some drafts of a random-weight head are kept
    // and later drafts follow verifies that accepted some.
    r.sampling.temperature = 1;
    r.sampling.seed = 7 + i;
    reqs.push_back(r);
  }
  auto res = RunToCompletion(**engine, reqs);
  ASSERT_TRUE(res.ok()) << res.status().message();
  EXPECT_GT((*engine)->metrics().spec_accepted_tokens_total.load(), 0u) << "the test meant to keep drafts";
  std::map<std::string, std::vector<int32_t>> full;
  for (size_t i = 0; i < reqs.size(); ++i) {
    full[reqs[i].id] = reqs[i].prompt;
    for (int32_t t : (*res)[i].ids()) full[reqs[i].id].push_back(t);
  }
  ASSERT_GT(records.size(), 100u) << "the test meant to draft at every step";
  size_t chained = 0;
  for (const DraftRecord& r : records) {
    const std::vector<int32_t>& seq = full[r.id];
    ASSERT_LE(r.after, int64_t(seq.size()));
    ASSERT_FALSE(r.drafts.empty());
    const std::vector<int32_t> prefix(seq.begin(), seq.begin() + r.after);
    EXPECT_EQ(r.drafts, ReferenceDrafts(**model, prefix, r.drafts.size()))
        << "request " << r.id << " after " << r.after << " tokens";
    chained += r.drafts.size() > 1;
  }
  EXPECT_GT(chained, 100u) << "the test meant to chain head steps";
}

// With a token map (--speculative-token-map) the head drafts among the map's
// ids only: each draft is the argmax over those ids of the whole
// vocabulary's head logits (ReferenceDrafts, on the same model: the draft
// rows belong to the engine), chained as without one; and greedy output is
// the same as without drafting.
TEST(NextnDrafts, TokenMapDraftsAmongItsIds) {
  const std::string dir = ::testing::TempDir() + "/engine_nextn_map";
  testing::WriteTinyHybridMtp(dir);
  auto model = LoadModel(dir, {.threads = 2});
  ASSERT_TRUE(model.ok()) << model.status().message();
  const int32_t V = int32_t((*model)->config().vocab_size);
  // Two thirds of the vocabulary, in a scrambled order (the map's order is its own).
  std::vector<int32_t> map;
  for (int32_t i = 0; i < V; ++i)
    if (i % 3 != 1) map.push_back(int32_t((int64_t(i) * 37 + 11) % V));
  std::sort(map.begin(), map.end());
  map.erase(std::unique(map.begin(), map.end()), map.end());
  std::reverse(map.begin(), map.end());
  ASSERT_GT(map.size(), size_t(V) / 2);
  std::vector<DraftRecord> records;
  EngineOptions o{.max_running_requests = 4, .chunked_prefill_size = 6,
                  .kv = {.block_size = 4, .num_blocks = 128, .dtype = DType::kF32},
                  .enable_prefix_cache = false,
                  .speculative = {.algorithm = SpeculativeAlgorithm::kNextn, .num_draft_tokens = 4, .num_steps = 3,
                                  .adaptive_budget = false, .token_map = map}};
  o.on_drafts = [&](const std::string& id, int64_t after, std::span<const int32_t> d) {
    records.push_back({id, after, std::vector<int32_t>(d.begin(), d.end())});
  };
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    EngineRequest r{.id = std::to_string(i), .max_tokens = 16};
    for (int t = 0; t < 6 + 3 * i; ++t) r.prompt.push_back(3 + (i * 31 + t * 13) % 90);
    r.sampling.temperature = 0;  // greedy
    reqs.push_back(r);
  }
  std::vector<std::vector<int32_t>> plain_ids;
  {
    EngineOptions p = o;
    p.speculative = {};
    p.on_drafts = nullptr;
    auto plain = Engine::Create(**model, p);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    auto res = RunToCompletion(**plain, reqs);
    ASSERT_TRUE(res.ok()) << res.status().message();
    for (const auto& r : *res) plain_ids.push_back(r.ids());
  }
  auto engine = Engine::Create(**model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto res = RunToCompletion(**engine, reqs);
  ASSERT_TRUE(res.ok()) << res.status().message();
  std::map<std::string, std::vector<int32_t>> full;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ((*res)[i].ids(), plain_ids[i]) << "request " << i << ": drafting changed the greedy output";
    full[reqs[i].id] = reqs[i].prompt;
    for (int32_t t : (*res)[i].ids()) full[reqs[i].id].push_back(t);
  }
  ASSERT_GT(records.size(), 20u) << "the test meant to draft at every step";
  size_t would_differ = 0;  // verifies where the whole vocabulary's head drafts another first token
  for (const DraftRecord& r : records) {
    const std::vector<int32_t>& seq = full[r.id];
    ASSERT_LE(r.after, int64_t(seq.size()));
    const std::vector<int32_t> prefix(seq.begin(), seq.begin() + r.after);
    EXPECT_EQ(r.drafts, ReferenceDrafts(**model, prefix, r.drafts.size(), map))
        << "request " << r.id << " after " << r.after << " tokens";
    would_differ += ReferenceDrafts(**model, prefix, 1)[0] != r.drafts[0];
  }
  EXPECT_GT(would_differ, 0u) << "the whole vocabulary's head never drafted outside the map: the map was not tested";
}

// The draft rows in lm_head's own format (Model::MakeDraftHead): with an
// NVFP4 lm_head (codes and block scales copied per row) and an F32 one,
// MtpForward's logits with the draft head equal, bit for bit, the whole
// vocabulary's logits at its ids, in map order (same rows of x, same kernels).
TEST(NextnDrafts, TokenMapLogitsAreTheHeadsOwn) {
  const std::string f32_dir = ::testing::TempDir() + "/engine_nextn_map_f32";
  const std::string nvfp4_dir = ::testing::TempDir() + "/engine_nextn_map_nvfp4";
  testing::WriteTinyHybridMtp(f32_dir);
  {
    auto store = TensorStore::OpenDir(f32_dir);
    ASSERT_TRUE(store.ok()) << store.status().message();
    QuantizeOptions q{.format = CheckpointQuant::kNvfp4, .quantize_lm_head = true};
    // A calibration amax for every module (names the quantizer does not use are ignored).
    for (const auto& [n, t] : store->all()) {
      if (n.size() > 7 && n.ends_with(".weight")) q.input_amax[n.substr(0, n.size() - 7)] = 4.0f;
    }
    std::filesystem::remove_all(nvfp4_dir);
    auto done = QuantizeCheckpoint(f32_dir, nvfp4_dir, q);
    ASSERT_TRUE(done.ok()) << done.status().message();
  }
  for (const std::string& dir : {f32_dir, nvfp4_dir}) {
    SCOPED_TRACE(dir);
    auto model = LoadModel(dir, {.threads = 2});
    ASSERT_TRUE(model.ok()) << model.status().message();
    Model& m = **model;
    const int64_t V = m.config().vocab_size, H = m.config().hidden_size;
    const std::vector<int32_t> map = {int32_t(V - 1), 0, 17, 5, int32_t(V / 2), 3};
    auto draft = m.MakeDraftHead(map);
    ASSERT_TRUE(draft.ok()) << draft.status().message();
    std::vector<int32_t> tokens;
    for (int t = 0; t < 9; ++t) tokens.push_back(3 + (t * 23) % 80);
    const int64_t L = int64_t(tokens.size());
    std::vector<std::vector<float>> logits(2);
    for (int k = 0; k < 2; ++k) {
      auto cache = KvCache::Create(m.cache_spec_with_mtp(),
                                   {.block_size = 16, .num_blocks = 2, .dtype = DType::kF32, .num_state_slots = 1});
      ASSERT_TRUE(cache.ok()) << cache.status().message();
      const std::vector<int32_t> table = {0, 1};
      std::vector<float> main_logits, hidden;
      SequenceChunk c{.tokens = tokens, .start_pos = 0, .block_table = table, .state_slot = 0, .skip_logits = true};
      ASSERT_TRUE(m.ForwardWithHidden({&c, 1}, **cache, main_logits, hidden).ok());
      // Every row's logits (all_logits): 8 rows of the head at once.
      SequenceChunk h{.tokens = std::span<const int32_t>(tokens).subspan(1), .start_pos = 0, .block_table = table,
                      .all_logits = true};
      ASSERT_TRUE(m.MtpForward({&h, 1}, std::span<const float>(hidden).first(size_t((L - 1) * H)), **cache, logits[k],
                               0, nullptr, k == 0 ? draft->get() : nullptr)
                      .ok());
    }
    const int64_t rows = L - 1, n = int64_t(map.size());
    ASSERT_EQ(int64_t(logits[0].size()), rows * n);
    ASSERT_EQ(int64_t(logits[1].size()), rows * V);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_EQ(std::bit_cast<uint32_t>(logits[0][size_t(r * n + j)]),
                  std::bit_cast<uint32_t>(logits[1][size_t(r * V + map[size_t(j)])]))
            << "row " << r << " id " << map[size_t(j)];
  }
}

}  // namespace
}  // namespace tern
