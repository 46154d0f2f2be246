// Engine metrics: counters, gauges and latency histograms that the server
// exports as Prometheus text (SGLang's metric names).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tern {

// A cumulative histogram with fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void Observe(double v);
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // [bounds.size() + 1]; the last is +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Snap() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct EngineMetrics {
  std::atomic<uint64_t> prompt_tokens_total{0}, generation_tokens_total{0};
  // Prompt tokens looked up in the prefix cache (each request once, at its
  // first admission) and those found there: cache_hit_rate = cached / looked up.
  std::atomic<uint64_t> cache_lookup_tokens_total{0}, cached_tokens_total{0};
  std::atomic<uint64_t> requests_total{0}, aborted_requests_total{0}, retractions_total{0};
  // Sequences stopped because their logits were not finite (the NaN guard),
  // and engine steps that failed (a refused batch, an exception in a step).
  std::atomic<uint64_t> nonfinite_logits_total{0}, engine_errors_total{0};
  std::atomic<int64_t> running{0}, queued{0}, total_blocks{0}, block_size{0};
  // KV blocks: used by requests (SGLang's num_used_tokens counts these),
  // held only by the prefix cache (evictable), and free; they sum to total_blocks.
  std::atomic<int64_t> used_blocks{0}, cached_blocks{0}, free_blocks{0};
  // Recurrent-state snapshots in the prefix cache (hybrid models), each
  // holding snapshot blocks of the pool (counted in cached/used blocks above).
  std::atomic<int64_t> state_snapshots{0};
  // Speculative decoding: verify forwards, drafts they scored, drafts kept.
  // Tokens per verify (SGLang's spec_accept_length) = (accepted + verifies) / verifies.
  std::atomic<uint64_t> spec_verifies_total{0}, spec_draft_tokens_total{0}, spec_accepted_tokens_total{0};
  std::atomic<double> gen_throughput{0};  // tokens/s over the last steps
  Histogram ttft{{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}};
  Histogram itl{{0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08, 0.1, 0.2,
                 0.3, 0.4, 0.5, 0.75, 1, 2, 4, 6, 8}};
  Histogram e2e{{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 800, 1200, 2400}};
};

}  // namespace tern
