#include "base/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TERN_CPU_RELAX() _mm_pause()
#else
#define TERN_CPU_RELAX() std::this_thread::yield()
#endif

namespace tern {

size_t ThreadPool::HardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

ThreadPool::ThreadPool(size_t num_threads) {
  if (num_threads == 0) num_threads = HardwareThreads();
  workers_.reserve(num_threads - 1);
  for (size_t i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  epoch_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::DrainTasks(size_t thread_index) {
  for (;;) {
    const size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= num_tasks_) break;
    fn_(ctx_, task, thread_index);
  }
}

void ThreadPool::RunErased(size_t num_tasks, TaskFn fn, void* ctx) {
  if (num_tasks == 0) return;
  if (workers_.empty() || num_tasks == 1) {
    for (size_t t = 0; t < num_tasks; ++t) fn(ctx, t, 0);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  num_tasks_ = num_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(workers_.size(), std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_acq_rel);  // publishes the loop
  epoch_.notify_all();
  DrainTasks(0);
  while (busy_workers_.load(std::memory_order_acquire) != 0) TERN_CPU_RELAX();
}

void ThreadPool::WorkerLoop(size_t thread_index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin for a short while (a few tens of microseconds), then sleep.
    uint64_t e = epoch_.load(std::memory_order_acquire);
    for (int spin = 0; e == seen && spin < 20000; ++spin) {
      TERN_CPU_RELAX();
      e = epoch_.load(std::memory_order_acquire);
    }
    while (e == seen) {
      epoch_.wait(seen, std::memory_order_acquire);
      e = epoch_.load(std::memory_order_acquire);
    }
    seen = e;
    if (stop_.load(std::memory_order_acquire)) return;
    DrainTasks(thread_index);
    busy_workers_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace tern
