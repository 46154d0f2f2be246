#include <random>
#include <string_view>

#include <gtest/gtest.h>

#include "engine/block_allocator.h"
#include "engine/prefix_cache.h"
#include "engine/stop_strings.h"

namespace tern {
namespace {

TEST(BlockAllocator, AllocatesReleasesAndRefcounts) {
  BlockAllocator a(4);
  std::vector<int32_t> x, y;
  ASSERT_TRUE(a.Allocate(3, x));
  EXPECT_EQ(x.size(), 3u);
  EXPECT_EQ(a.num_free(), 1);
  EXPECT_FALSE(a.Allocate(2, y));  // all or nothing
  EXPECT_TRUE(y.empty());
  EXPECT_EQ(a.num_free(), 1);
  const int32_t shared = x[0];
  a.Retain(shared);  // a second owner (prefix sharing)
  a.ReleaseAll(x);
  EXPECT_EQ(a.num_free(), 3);  // `shared` still owned
  a.Release(shared);
  EXPECT_EQ(a.num_free(), 4);
  ASSERT_TRUE(a.Allocate(4, y));
  std::sort(y.begin(), y.end());
  EXPECT_EQ(y, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(BlocksFor(0, 16), 0);
  EXPECT_EQ(BlocksFor(16, 16), 1);
  EXPECT_EQ(BlocksFor(17, 16), 2);
}

std::vector<int32_t> Iota(int n, int start) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(start + i);
  return v;
}

// A sequence as the engine holds it: blocks (with references) and a cursor.
struct Seq {
  std::vector<int32_t> blocks;
  PrefixCache::Cursor cursor;
};

TEST(PrefixCache, MatchesWholeBlocksAndSharesThem) {
  BlockAllocator a(16);
  PrefixCache c(a, 4, true);
  const std::vector<int32_t> t = Iota(10, 100);  // 2 full blocks + 2 tokens
  Seq s1;
  EXPECT_EQ(c.Match(t, 9, s1.blocks, s1.cursor), 0);
  ASSERT_TRUE(c.Allocate(3, s1.blocks));
  c.Insert(t, 10, s1.blocks, s1.cursor);
  EXPECT_EQ(c.cached(), 2);       // the partial third block is not cached
  EXPECT_EQ(c.evictable(), 0);    // s1 still uses both
  const std::vector<int32_t> s1_blocks = s1.blocks;

  // Same first 6 tokens: one whole block matches (the second block differs at token 6).
  std::vector<int32_t> u = Iota(6, 100);
  u.push_back(7);
  u.push_back(8);
  u.push_back(9);
  Seq s2;
  EXPECT_EQ(c.Match(u, int64_t(u.size()) - 1, s2.blocks, s2.cursor), 4);
  ASSERT_EQ(s2.blocks.size(), 1u);
  EXPECT_EQ(s2.blocks[0], s1_blocks[0]);
  EXPECT_EQ(a.ref_count(s1_blocks[0]), 3);  // cache + s1 + s2
  // The limit caps the match: a prompt of exactly 8 cached tokens leaves its last block to compute.
  Seq s3;
  EXPECT_EQ(c.Match(t, 7, s3.blocks, s3.cursor), 4);
  c.Release(s3.blocks, s3.cursor);

  c.Release(s1.blocks, s1.cursor);
  EXPECT_EQ(c.evictable(), 1);  // block 1 only; block 0 is still s2's
  EXPECT_EQ(a.num_free(), 16 - 2 - 0);  // s1's partial block came back
  c.Release(s2.blocks, s2.cursor);
  EXPECT_EQ(c.evictable(), 2);
  EXPECT_EQ(c.available(), 16);
  EXPECT_EQ(c.Flush(), 2);
  EXPECT_EQ(a.num_free(), 16);
  EXPECT_EQ(c.cached(), 0);
}

TEST(PrefixCache, DuplicateBlocksSwitchToTheCachedCopy) {
  BlockAllocator a(16);
  PrefixCache c(a, 4, true);
  const std::vector<int32_t> t = Iota(8, 1);
  Seq x, y;  // both computed the same prefix before either was cached
  ASSERT_TRUE(c.Allocate(2, x.blocks));
  ASSERT_TRUE(c.Allocate(2, y.blocks));
  c.Insert(t, 8, x.blocks, x.cursor);
  const std::vector<int32_t> y_own = y.blocks;
  c.Insert(t, 8, y.blocks, y.cursor);
  EXPECT_EQ(y.blocks, x.blocks);  // y now reads x's cached blocks
  EXPECT_EQ(a.ref_count(y_own[0]), 0);
  EXPECT_EQ(a.num_free(), 14);
  EXPECT_EQ(c.cached(), 2);
  c.Release(x.blocks, x.cursor);
  c.Release(y.blocks, y.cursor);
  EXPECT_EQ(c.evictable(), 2);
}

TEST(PrefixCache, EvictsLeastRecentlyUsedLeavesWhenThePoolIsShort) {
  BlockAllocator a(6);
  PrefixCache c(a, 2, true);
  // Two cached paths: A = 2 blocks, then B = 2 blocks; A is used again after B.
  const std::vector<int32_t> pa = Iota(4, 10), pb = Iota(4, 50);
  for (const auto* p : {&pa, &pb}) {
    Seq s;
    ASSERT_TRUE(c.Allocate(2, s.blocks));
    c.Insert(*p, 4, s.blocks, s.cursor);
    c.Release(s.blocks, s.cursor);
  }
  Seq touch;
  EXPECT_EQ(c.Match(pa, 4, touch.blocks, touch.cursor), 4);
  c.Release(touch.blocks, touch.cursor);
  EXPECT_EQ(a.num_free(), 2);
  EXPECT_EQ(c.available(), 6);
  // Needing 4 blocks evicts B (least recently used) leaf first, then its parent.
  Seq big;
  ASSERT_TRUE(c.Allocate(4, big.blocks));
  EXPECT_EQ(c.cached(), 2);
  Seq check;
  EXPECT_EQ(c.Match(pb, 4, check.blocks, check.cursor), 0);
  EXPECT_EQ(c.Match(pa, 4, check.blocks, check.cursor), 4);
  // Blocks in use are never evicted: nothing more can be had.
  std::vector<int32_t> more;
  EXPECT_FALSE(c.Allocate(1, more));
  EXPECT_TRUE(more.empty());
  c.Release(check.blocks, check.cursor);
  ASSERT_TRUE(c.Allocate(2, more));  // now A can go
  EXPECT_EQ(c.cached(), 0);
  c.Release(more, check.cursor);
  c.Release(big.blocks, big.cursor);
  EXPECT_EQ(a.num_free(), 6);
}

TEST(PrefixCache, EvictsALittleAheadInLargePools) {
  BlockAllocator a(128);
  PrefixCache c(a, 1, true);
  Seq s;
  ASSERT_TRUE(c.Allocate(128, s.blocks));
  c.Insert(Iota(128, 0), 128, s.blocks, s.cursor);  // one path of 128 one-token blocks
  c.Release(s.blocks, s.cursor);
  EXPECT_EQ(a.num_free(), 0);
  EXPECT_EQ(c.evictable(), 128);
  std::vector<int32_t> one;
  ASSERT_TRUE(c.Allocate(1, one));
  EXPECT_EQ(c.cached(), 126);  // 128 / 64 = 2 evicted (the deepest, least recently used leaves)
  EXPECT_EQ(a.num_free(), 1);
  Seq m;
  EXPECT_EQ(c.Match(Iota(128, 0), 128, m.blocks, m.cursor), 126);  // the prefix is intact
  c.Release(m.blocks, m.cursor);
}

TEST(PrefixCache, DisabledCachesNothing) {
  BlockAllocator a(4);
  PrefixCache c(a, 2, false);
  const std::vector<int32_t> t = Iota(4, 1);
  Seq s;
  ASSERT_TRUE(c.Allocate(2, s.blocks));
  c.Insert(t, 4, s.blocks, s.cursor);
  c.Release(s.blocks, s.cursor);
  EXPECT_EQ(a.num_free(), 4);
  Seq m;
  EXPECT_EQ(c.Match(t, 4, m.blocks, m.cursor), 0);
  EXPECT_TRUE(m.blocks.empty());
}

TEST(StopStrings, HoldsBackPrefixesAndCutsMatches) {
  StopStringMatcher m({"STOP", "\n\n"});
  EXPECT_FALSE(m.Append("hello S"));
  EXPECT_EQ(m.TakeReady(), "hello ");  // "S" could start "STOP"
  EXPECT_FALSE(m.Append("T"));
  EXPECT_EQ(m.TakeReady(), "");
  EXPECT_FALSE(m.Append("x\n"));
  EXPECT_EQ(m.TakeReady(), "STx");  // "\n" could start "\n\n"
  EXPECT_TRUE(m.Append("\nrest"));
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "\n\n");
  EXPECT_EQ(m.TakeReady(), "");
  EXPECT_EQ(m.text(), "hello STx");
  EXPECT_EQ(m.TakeRest(), "");
}

TEST(StopStrings, MatchAcrossPiecesAndEarliestWins) {
  StopStringMatcher m({"bc", "abcd"});
  EXPECT_FALSE(m.Append("xa"));
  EXPECT_TRUE(m.Append("bcd"));
  // "abcd" starts at 1, before "bc" at 2: the earliest start wins.
  EXPECT_EQ(m.text(), "x");
  EXPECT_EQ(m.matched(), "abcd");
  EXPECT_EQ(m.TakeRest(), "x");
  StopStringMatcher none({});
  EXPECT_FALSE(none.Append("anything"));
  EXPECT_EQ(none.TakeReady(), "anything");
}

// Against a brute-force reading of the contract, on random text streamed in
// random pieces over a 3-letter alphabet (overlapping, self-similar stops):
// the text stops before the earliest occurrence (ties: the first stop listed)
// of any stop string, and what TakeReady holds back is the longest tail that
// is a proper prefix of some stop string.
TEST(StopStrings, StreamedEqualsBruteForce) {
  std::mt19937 rng(7);
  auto word = [&](size_t max_len) {
    std::string w(1 + rng() % max_len, 'a');
    for (char& c : w) c = char('a' + rng() % 3);
    return w;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    for (int k = int(rng() % 4); k >= 0; --k) stops.push_back(word(6));
    const std::string all = word(40);
    // Brute force: the first position where some stop ends, and the earliest start among those ending there or
    // before (a stop ending later cannot start earlier once the stream has stopped at the first end).
    size_t cut = std::string::npos, first_end = std::string::npos;
    std::string matched;
    for (size_t end = 1; end <= all.size() && first_end == std::string::npos; ++end)
      for (const auto& s : stops)
        if (s.size() <= end && all.compare(end - s.size(), s.size(), s) == 0) first_end = end;
    StopStringMatcher m(stops);
    std::string emitted;
    size_t fed = 0;
    while (fed < all.size() && !m.stopped()) {
      const size_t n = std::min(all.size() - fed, size_t(1 + rng() % 5));
      const size_t piece_end = fed + n;
      m.Append(std::string_view(all).substr(fed, n));
      fed = piece_end;
      if (!m.stopped()) {
        // Held back: the longest tail of all[0, fed) that is a proper prefix of a stop.
        size_t keep = 0;
        for (const auto& s : stops)
          for (size_t k = std::min(s.size() - 1, fed); k > keep; --k)
            if (all.compare(fed - k, k, s, 0, k) == 0) keep = k;
        emitted += m.TakeReady();
        ASSERT_EQ(emitted, all.substr(0, fed - keep)) << "trial " << trial;
      } else {
        // Stopped in this piece: the matches ending inside it, earliest start first, ties by list order.
        const size_t piece_begin = piece_end - n;
        for (size_t k = 0; k < stops.size(); ++k) {
          const auto& s = stops[k];
          for (size_t start = 0; start + s.size() <= piece_end; ++start)
            if (start + s.size() > piece_begin && all.compare(start, s.size(), s) == 0) {
              if (start < cut) cut = start, matched = s;
              break;
            }
        }
        ASSERT_LE(first_end, piece_end);
      }
    }
    if (cut == std::string::npos) {
      ASSERT_FALSE(m.stopped()) << "trial " << trial;
      ASSERT_EQ(first_end, std::string::npos);
      emitted += m.TakeRest();
      ASSERT_EQ(emitted, all);
    } else {
      ASSERT_TRUE(m.stopped());
      EXPECT_EQ(m.text(), all.substr(0, cut)) << "trial " << trial;
      EXPECT_EQ(m.matched(), matched) << "trial " << trial;
      emitted += m.TakeRest();
      EXPECT_EQ(emitted, all.substr(0, cut));
    }
  }
}

}  // namespace
}  // namespace tern
