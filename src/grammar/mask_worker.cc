#include "grammar/mask_worker.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "grammar/compiled_grammar.h"

namespace tern::grammar {

MaskWorker& MaskWorker::Get() {
  static MaskWorker worker;
  return worker;
}

void MaskWorker::Add(std::weak_ptr<const CompiledGrammar> g) {
  std::lock_guard lock(mu_);
  if (stop_) return;
  queue_.push_back(std::move(g));
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  cv_.notify_one();
}

MaskWorker::~MaskWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void MaskWorker::Run() {
  // Lowest priority for this thread only (Linux: the nice value is per thread).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  for (;;) {
    std::weak_ptr<const CompiledGrammar> next;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    // One state at a time, re-checking that the grammar is still wanted and
    // that the process is not exiting.
    for (int32_t s = 0;; ++s) {
      {
        std::lock_guard lock(mu_);
        if (stop_) return;
      }
      const std::shared_ptr<const CompiledGrammar> g = next.lock();
      if (!g || s >= g->automaton().num_states()) break;
      // Past the grammar's mask budget (or the process's) the rest are left
      // to the matchers that reach them.
      if (g->automaton().HasBytes(s) && !g->Precompute(s)) break;
    }
  }
}

}  // namespace tern::grammar
