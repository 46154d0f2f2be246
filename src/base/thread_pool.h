// ThreadPool: a fixed set of worker threads that run data-parallel loops.
//
// Contract: Run(n, fn) calls fn(task, thread) for every task in [0, n) exactly
// once and returns when all calls have finished. The calling thread takes part
// as thread 0, so a pool of size 1 runs everything inline. Tasks are claimed
// dynamically (an atomic counter), which balances uneven work such as MoE
// experts. Run is not reentrant: fn must not call Run on the same pool, and
// only one thread may call Run at a time.
//
// Workers spin briefly between loops before sleeping (C++20 atomic wait), since
// a decode step issues hundreds of short loops and a sleep/wake round trip per
// loop would cost more than the loop itself. Run waits only for the tasks, not
// for every worker to wake: on a busy machine a worker that is not scheduled in
// time simply misses the loop and the others (the caller at least) do its share.
#pragma once

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

namespace tern {

// Thrown by ThreadPool's constructor when the OS refuses a thread (memory or
// process limits); the workers already started have been stopped and joined.
class ThreadStartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ThreadPool {
 public:
  // num_threads: total threads including the caller (>= 1). 0 means all cores.
  // Throws ThreadStartError when a worker cannot be started.
  explicit ThreadPool(size_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size() + 1; }

  template <typename F>
  void Run(size_t num_tasks, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    RunErased(num_tasks, [](void* ctx, size_t task, size_t thread) { (*static_cast<Fn*>(ctx))(task, thread); },
              const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Splits [0, n) into at most size() contiguous ranges of whole multiples of
  // `grain` and calls fn(begin, end, thread) once per range.
  template <typename F>
  void ParallelFor(size_t n, size_t grain, F&& fn) {
    if (n == 0) return;
    if (grain == 0) grain = 1;
    const size_t units = (n + grain - 1) / grain;
    const size_t parts = units < size() ? units : size();
    const size_t per = (units + parts - 1) / parts;
    Run(parts, [&](size_t p, size_t thread) {
      const size_t b = p * per * grain;
      size_t e = (p + 1) * per * grain;
      if (e > n) e = n;
      if (b < e) fn(b, e, thread);
    });
  }

  static size_t HardwareThreads();

 private:
  using TaskFn = void (*)(void*, size_t, size_t);
  void RunErased(size_t num_tasks, TaskFn fn, void* ctx);
  void WorkerLoop(size_t thread_index);
  void StopWorkers();

  // One loop, living on Run's stack. Workers reach it only through current_
  // and only while counted in inside_, which Run waits to drop to zero after
  // unpublishing it, so the stack frame outlives every access.
  struct Loop {
    TaskFn fn;
    void* ctx;
    size_t num_tasks;
    alignas(64) std::atomic<size_t> next{0};
    alignas(64) std::atomic<size_t> done{0};
  };
  static void Drain(Loop& loop, size_t thread_index);

  std::vector<std::thread> workers_;
  alignas(64) std::atomic<Loop*> current_{nullptr};
  alignas(64) std::atomic<size_t> inside_{0};
  alignas(64) std::atomic<uint64_t> epoch_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace tern
