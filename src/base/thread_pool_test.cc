#include "base/thread_pool.h"

#include <atomic>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace tern {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (size_t threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (size_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<size_t> max_thread{0};
      pool.Run(n, [&](size_t task, size_t thread) {
        hits[task].fetch_add(1);
        size_t m = max_thread.load();
        while (thread > m && !max_thread.compare_exchange_weak(m, thread)) {}
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " task " << i;
      EXPECT_LT(max_thread.load(), threads);
    }
  }
}

TEST(ThreadPool, ParallelForCoversRangeInGrains) {
  ThreadPool pool(3);
  for (size_t n : {1, 5, 64, 1001}) {
    for (size_t grain : {1, 4, 16}) {
      std::vector<int> hits(n, 0);
      pool.ParallelFor(n, grain, [&](size_t b, size_t e, size_t) {
        EXPECT_EQ(b % grain, 0u);
        for (size_t i = b; i < e; ++i) hits[i]++;
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1);
    }
  }
}

TEST(ThreadPool, ManyShortLoops) {
  ThreadPool pool(2);
  std::atomic<long> sum{0};
  for (int iter = 0; iter < 20000; ++iter) pool.Run(4, [&](size_t t, size_t) { sum += long(t); });
  EXPECT_EQ(sum.load(), 20000L * 6);
}

}  // namespace
}  // namespace tern
