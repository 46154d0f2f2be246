#include "base/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
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

// More threads than cores, loops whose state lives on the caller's stack, and
// pauses long enough for workers to fall asleep between bursts: every task runs
// once, its writes are visible when Run returns, and no worker touches a loop
// after Run has returned (ASan would flag the stale stack frame).
TEST(ThreadPool, OversubscribedLoopsWithSleepingWorkers) {
  ThreadPool pool(8);
  for (int burst = 0; burst < 20; ++burst) {
    for (int iter = 0; iter < 500; ++iter) {
      const size_t n = 1 + static_cast<size_t>((burst * 500 + iter) % 13);
      std::vector<int> out(n, 0);
      pool.Run(n, [&out, iter](size_t t, size_t) { out[t] = iter + static_cast<int>(t); });
      for (size_t t = 0; t < n; ++t) ASSERT_EQ(out[t], iter + static_cast<int>(t));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace
}  // namespace tern
