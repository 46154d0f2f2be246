// The BPE merge procedures: the fast (short words) and heap (long words)
// versions against the naive reference that rescans all pairs before every
// merge, on random words and random merge tables, and on the synthetic
// tokenizer's learnt merges.
#include "tokenize/bpe_model.h"

#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenize/synthetic.h"

namespace tern::tok {
namespace {

void ExpectAllAgree(const MergeTable& merges, const std::vector<int32_t>& word) {
  std::vector<int32_t> naive = word, fast = word, heap = word;
  MergeWordNaive(merges, &naive);
  MergeWordFast(merges, &fast);
  MergeWordHeap(merges, &heap);
  ASSERT_EQ(fast, naive) << "word of " << word.size() << " symbols";
  ASSERT_EQ(heap, naive) << "word of " << word.size() << " symbols";
}

TEST(BpeMerge, RandomTablesAndWords) {
  std::mt19937 rng(1234);
  for (int table = 0; table < 20; ++table) {
    // Symbols 0..7 are the alphabet; merges create ids 100+; ranks are
    // distinct but in random order; merges of merged ids also appear.
    MergeTable merges;
    std::vector<int32_t> ids = {0, 1, 2, 3, 4, 5, 6, 7};
    std::vector<uint32_t> ranks(60);
    for (uint32_t i = 0; i < ranks.size(); ++i) ranks[i] = i;
    std::shuffle(ranks.begin(), ranks.end(), rng);
    for (int m = 0; m < 60; ++m) {
      int32_t a = ids[rng() % ids.size()], b = ids[rng() % ids.size()];
      int32_t merged = 100 + m;
      merges.Put(a, b, ranks[size_t(m)], merged);
      ids.push_back(merged);
    }
    for (int w = 0; w < 300; ++w) {
      const size_t n = w < 250 ? 1 + rng() % 40 : 100 + rng() % 400;  // both paths
      std::vector<int32_t> word(n);
      for (auto& s : word) s = int32_t(rng() % (w % 2 ? 3 : 8));       // repetitive too
      ExpectAllAgree(merges, word);
    }
  }
}

TEST(BpeMerge, SyntheticTokenizerMerges) {
  const auto json = nlohmann::json::parse(MakeSyntheticTokenizerJson(2048));
  auto model = BpeModel::FromJson(json["model"], /*byte_level=*/true);
  ASSERT_TRUE(model.ok()) << model.status().message();
  std::mt19937 rng(99);
  const std::string letters = "etaoinshrdlu ETAOIN.,'";
  for (int w = 0; w < 2000; ++w) {
    const size_t n = w < 1900 ? 1 + rng() % 30 : 129 + rng() % 300;
    std::vector<int32_t> word(n);
    for (auto& s : word) {
      const char c = letters[rng() % letters.size()];
      auto id = model->TokenToId(c == ' ' ? std::string("\xC4\xA0") : std::string(1, c));
      ASSERT_TRUE(id.has_value());
      s = *id;
    }
    ExpectAllAgree(model->merges(), word);
  }
}

TEST(BpeMerge, DuplicateMergeKeepsLastRank) {
  // Hugging Face collects merges into a map: a repeated pair takes the later rank.
  MergeTable t;
  t.Put(1, 2, 0, 10);
  t.Put(2, 3, 1, 11);
  t.Put(1, 2, 5, 10);
  std::vector<int32_t> w = {1, 2, 3};
  MergeWordNaive(t, &w);
  EXPECT_EQ(w, (std::vector<int32_t>{1, 11}));
  EXPECT_EQ(t.size(), 2u);
}

}  // namespace
}  // namespace tern::tok

namespace tern::tok {
namespace {

TEST(BpeCache, CachedEqualsUncachedAcrossModels) {
  // Two models share the thread's cache; each must only ever see its own
  // entries, and cached results must equal freshly merged ones.
  const auto j1 = nlohmann::json::parse(MakeSyntheticTokenizerJson(300));
  const auto j2 = nlohmann::json::parse(MakeSyntheticTokenizerJson(2048));
  auto m1 = BpeModel::FromJson(j1["model"], true);
  auto m2 = BpeModel::FromJson(j2["model"], true);
  ASSERT_TRUE(m1.ok() && m2.ok());
  const std::vector<std::string> pieces = {"the", " the", " model", " tokenizer", "ing", " and",
                                           "\xE4\xBD\xA0\xE5\xA5\xBD", " question", " answers"};
  std::vector<int32_t> scratch;
  for (int round = 0; round < 3; ++round) {
    for (const std::string& p : pieces) {
      for (const BpeModel* m : {&*m1, &*m2}) {
        std::vector<int32_t> cached, fresh;
        m->Tokenize(p, &cached, &scratch);
        m->TokenizeUncached(p, &fresh, &scratch);
        ASSERT_EQ(cached, fresh) << p << " round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace tern::tok
