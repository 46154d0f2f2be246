#include <gtest/gtest.h>

#include "engine/block_allocator.h"
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

}  // namespace
}  // namespace tern
