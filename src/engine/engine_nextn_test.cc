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
#include <map>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "engine/run_to_completion.h"

namespace tern {
namespace {

// The drafts the head gives after `tokens` (length L >= 2), `count` of them.
std::vector<int32_t> ReferenceDrafts(Model& m, const std::vector<int32_t>& tokens, size_t count) {
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
    out.push_back(int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
  }
  return out;
}

TEST(NextnDrafts, EqualTheHeadRunFromScratch) {
  const std::string dir = ::testing::TempDir() + "/engine_nextn";
  testing::WriteTinyHybridMtp(dir);
  auto model = LoadModel(dir, {.threads = 2});
  ASSERT_TRUE(model.ok()) << model.status().message();
  struct Record {
    std::string id;
    int64_t after;
    std::vector<int32_t> drafts;
  };
  std::vector<Record> records;
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
  for (const Record& r : records) {
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

}  // namespace
}  // namespace tern
