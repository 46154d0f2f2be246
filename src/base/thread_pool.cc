#include "base/thread_pool.h"

#include <fmt/format.h>

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
  try {
    workers_.reserve(num_threads - 1);
    for (size_t i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
  } catch (const std::exception& e) {
    // Thread creation fails under a memory or process limit. The destructor
    // does not run for a half-built object, and a joinable std::thread left
    // behind would call std::terminate: stop the workers already started.
    const size_t started = workers_.size();
    StopWorkers();
    throw ThreadStartError(fmt::format("cannot start {} worker threads ({} started): {}", num_threads - 1,
                                       started, e.what()));
  }
}

ThreadPool::~ThreadPool() { StopWorkers(); }

void ThreadPool::StopWorkers() {
  stop_.store(true, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  epoch_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::Drain(Loop& loop, size_t thread_index) {
  for (;;) {
    const size_t task = loop.next.fetch_add(1, std::memory_order_relaxed);
    if (task >= loop.num_tasks) return;
    loop.fn(loop.ctx, task, thread_index);
    loop.done.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::RunErased(size_t num_tasks, TaskFn fn, void* ctx) {
  if (num_tasks == 0) return;
  if (workers_.empty() || num_tasks == 1) {
    for (size_t t = 0; t < num_tasks; ++t) fn(ctx, t, 0);
    return;
  }
  Loop loop{fn, ctx, num_tasks};
  current_.store(&loop, std::memory_order_seq_cst);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  epoch_.notify_all();
  Drain(loop, 0);
  while (loop.done.load(std::memory_order_acquire) != num_tasks) TERN_CPU_RELAX();
  // Unpublish, then wait out workers that may still hold the pointer. Dekker
  // pairing with WorkerLoop: both sides use seq_cst, so a worker either sees
  // nullptr or is seen in inside_.
  current_.store(nullptr, std::memory_order_seq_cst);
  while (inside_.load(std::memory_order_seq_cst) != 0) TERN_CPU_RELAX();
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
    inside_.fetch_add(1, std::memory_order_seq_cst);
    // May be a later loop than the one that woke us, or none: either is fine.
    if (Loop* loop = current_.load(std::memory_order_seq_cst)) Drain(*loop, thread_index);
    inside_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace tern
