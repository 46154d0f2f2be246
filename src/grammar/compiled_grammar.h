// CompiledGrammar: an automaton (automaton.h) plus, for every automaton
// state that consumes bytes, the tokens decided there without looking at
// the stack below it (xgrammar's adaptive token mask cache):
//   accepted  - the token's bytes are matched inside the state's own rule
//               (and the rules it calls): allowed whatever the context;
//   uncertain - the rule can end inside the token, and some caller's
//               continuation (followed up to a few levels) takes the rest:
//               the matcher checks these against its real stacks;
//   rejected  - everything else (never stored).
// Most tokens are decided once here, so the matcher's per-token work is an
// OR of a few bitsets plus a check of the few uncertain tokens.
//
// Create computes the masks of the states in order until a CPU-time budget
// is spent; the states left over are computed by the background MaskWorker
// (mask_worker.h) when asked, and otherwise, or if a matcher gets there
// first, the first time a matcher reaches them (computed without a lock,
// published under one: two threads may both compute a state, one result is
// kept; later readers take it without a lock). So a grammar with many
// states (a string of maxLength 1000 is 1000 states) is ready at once, and
// each state costs one walk of the vocabulary trie at most.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "grammar/automaton.h"
#include "grammar/vocabulary.h"

namespace tern::grammar {

struct StateMask {
  std::vector<uint64_t> accepted_bits;  // dense form ([mask_words]); empty when `accepted` is used
  std::vector<int32_t> accepted;        // sparse form: token ids
  std::vector<int32_t> uncertain;       // token ids in trie (byte) order
  bool operator==(const StateMask&) const = default;
};

class CompiledGrammar {
 public:
  // eager_cpu: the thread CPU time spent computing masks before returning
  // (the rest are computed on first use, and by the MaskWorker if
  // `background`); unlimited by default.
  // max_mask_bytes: the memory this grammar's stored masks may take (see
  // mask()); the process's grammars together take at most
  // ProcessMaskBudget().
  static std::shared_ptr<const CompiledGrammar> Create(
      Automaton automaton, std::shared_ptr<const TokenVocabulary> vocab,
      std::chrono::nanoseconds eager_cpu = std::chrono::nanoseconds::max(), bool background = false,
      size_t max_mask_bytes = kDefaultMaxMaskBytes);
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  // 128 MiB: ~6,900 distinct dense masks of the Qwen3 vocabulary (19 KB
  // each); the schemas and regexes of the test suites need under 200.
  static constexpr size_t kDefaultMaxMaskBytes = size_t(128) << 20;
  // The memory all live grammars' stored masks may take together (1 GiB by
  // default), and what they take now.
  static void SetProcessMaskBudget(size_t bytes);
  static size_t ProcessMaskBudget();
  static size_t ProcessMaskBytes();

  const Automaton& automaton() const { return automaton_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  // The mask of a state with HasBytes(state). Thread-safe. A mask computed
  // here is stored (for the grammar's lifetime, shared by equal states)
  // while the grammar's and the process's budgets allow; past them it is
  // computed into `spill`, which is returned: a grammar whose states each
  // allow a different set of tokens (10,000 [^x] of a regex: 190,000 states
  // of ~1 KB of Qwen3 mask each, ~190 MB, and 256 such grammars cached)
  // costs time per step past its budget, not memory.
  const StateMask& mask(int32_t state, StateMask& spill) const {
    if (const StateMask* m = ready_[size_t(state)].load(std::memory_order_acquire)) return *m;
    return *ComputeMask(state, &spill);
  }
  // Computes and stores the mask of a state with HasBytes(state) if it is
  // not yet; false when the budgets refuse to store it (nothing kept).
  bool Precompute(int32_t state) const;
  // States whose masks are computed so far (of `masks_total`), and their memory.
  int64_t masks_ready() const;
  int64_t masks_total() const;
  // The classification of one state computed afresh, with or without the
  // walk's shortcuts (tests compare the two).
  StateMask ClassifyForTest(int32_t state, bool shortcuts) const;
  size_t memory_bytes() const;
  // All this grammar holds: the automaton, the per-state and per-trie-node
  // tables, and the stored masks.
  size_t total_bytes() const;

 private:
  CompiledGrammar(Automaton a, std::shared_ptr<const TokenVocabulary> v);
  // spill null: store or nothing (then the return value is null).
  const StateMask* ComputeMask(int32_t state, StateMask* spill) const;
  Automaton automaton_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<uint64_t> below_;      // [trie node]: byte classes strictly below it (<= 64 classes)
  std::vector<uint64_t> self_loop_;  // [state]: byte classes that stay in the state
  mutable std::mutex mu_;            // guards storage_, by_content_ and writes of ready_
  // The distinct masks, each held once: states with equal masks share it (the
  // states of [ -~]{0,99999} all but the last few, which would otherwise hold
  // a dense 19 KB mask of a 151k-token vocabulary each, ~1.9 GB).
  mutable std::vector<std::unique_ptr<StateMask>> storage_;
  mutable std::unordered_multimap<uint64_t, const StateMask*> by_content_;  // content hash -> mask
  std::unique_ptr<std::atomic<const StateMask*>[]> ready_;
  size_t max_mask_bytes_ = kDefaultMaxMaskBytes;
  mutable size_t stored_bytes_ = 0;  // the masks in storage_ (guarded by mu_), counted in the process's total too
};

}  // namespace tern::grammar
