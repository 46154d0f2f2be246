// CompiledGrammar: the per-state token classification, one walk of the
// vocabulary trie per byte-consuming state. A subtree is skipped as soon as
// no stack survives its prefix, so a state that takes few bytes (inside a
// literal) costs little; a subtree whose bytes all loop in a state that
// neither calls nor ends (inside a JSON string) is accepted without a walk.
#include <time.h>

#include "grammar/compiled_grammar.h"
#include "grammar/stack.h"

namespace tern::grammar {
namespace {
std::chrono::nanoseconds ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// The classification of one state's tokens.
StateMask Classify(const Automaton& a, const TokenVocabulary& v, int32_t s, const std::vector<uint64_t>& below,
                   const std::vector<uint64_t>& self_loop) {
  const auto& trie = v.trie();
  const auto& sorted = v.sorted_ids();
  const bool fast = !below.empty();
  StackPool pool;
  StackRunner runner(a, pool);
  std::vector<PositionSet> sets(v.max_token_bytes() + 1);
  std::vector<int32_t> accepted;
  StateMask m;
  sets[0].nodes = {pool.Intern(s, ContextMarker(0))};
  sets[0].unknown = false;
  for (int32_t i = 1; i < int32_t(trie.size());) {
    const auto& node = trie[size_t(i)];
    PositionSet& cur = sets[node.depth];
    runner.Advance(sets[node.depth - 1], node.byte, &cur);
    if (cur.nodes.empty() && !cur.unknown) {
      i = node.subtree_end;  // no token with this prefix can be matched
      continue;
    }
    if (fast && cur.nodes.size() == 1 && !cur.unknown) {
      const StackPool::Node p = pool.node(cur.nodes[0]);
      if (p.level == 0 && !a.IsFinal(p.state) && a.Calls(p.state).empty() &&
          (below[size_t(i)] & ~self_loop[size_t(p.state)]) == 0) {
        // Every token at and below this node stays in this state: accepted.
        const int32_t end = node.subtree_end < int32_t(trie.size()) ? trie[size_t(node.subtree_end)].token_begin
                                                                    : int32_t(sorted.size());
        for (int32_t k = node.token_begin; k < end; ++k) accepted.push_back(sorted[size_t(k)]);
        i = node.subtree_end;
        continue;
      }
    }
    if (node.token_begin < node.token_end) {
      bool inside = false;
      for (int32_t id : cur.nodes) inside = inside || pool.node(id).level == 0;
      for (int32_t k = node.token_begin; k < node.token_end; ++k)
        (inside ? accepted : m.uncertain).push_back(sorted[size_t(k)]);
    }
    ++i;
  }
  if (accepted.size() * 32 > size_t(v.size())) {
    m.accepted_bits.assign(v.mask_words(), 0);
    for (int32_t id : accepted) m.accepted_bits[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
  } else {
    m.accepted = std::move(accepted);
  }
  return m;
}
}  // namespace

CompiledGrammar::CompiledGrammar(Automaton a, std::shared_ptr<const TokenVocabulary> v)
    : automaton_(std::move(a)), vocab_(std::move(v)) {
  const int32_t S = automaton_.num_states();
  storage_.resize(size_t(S));
  ready_ = std::make_unique<std::atomic<const StateMask*>[]>(size_t(S));
  for (int32_t s = 0; s < S; ++s) ready_[size_t(s)].store(nullptr, std::memory_order_relaxed);
  if (automaton_.num_byte_classes() > 64) return;
  const auto& trie = vocab_->trie();
  below_.assign(trie.size(), 0);
  std::vector<int32_t> parent(trie.size(), 0), path(vocab_->max_token_bytes() + 1, 0);
  for (int32_t i = 1; i < int32_t(trie.size()); ++i) {
    path[trie[size_t(i)].depth] = i;
    parent[size_t(i)] = path[trie[size_t(i)].depth - 1];
  }
  for (int32_t i = int32_t(trie.size()) - 1; i >= 1; --i)
    below_[size_t(parent[size_t(i)])] |= below_[size_t(i)] | (uint64_t(1) << automaton_.ByteClass(trie[size_t(i)].byte));
  self_loop_.assign(size_t(S), 0);
  for (int32_t s = 0; s < S; ++s)
    for (int b = 0; b < 256; ++b)
      if (automaton_.Next(s, uint8_t(b)) == s) self_loop_[size_t(s)] |= uint64_t(1) << automaton_.ByteClass(uint8_t(b));
}

std::shared_ptr<const CompiledGrammar> CompiledGrammar::Create(Automaton automaton,
                                                               std::shared_ptr<const TokenVocabulary> vocab,
                                                               std::chrono::nanoseconds eager_cpu) {
  auto g = std::shared_ptr<CompiledGrammar>(new CompiledGrammar(std::move(automaton), std::move(vocab)));
  const auto start = ThreadCpu();
  for (int32_t s = 0; s < g->automaton_.num_states(); ++s) {
    if (eager_cpu != std::chrono::nanoseconds::max() && ThreadCpu() - start > eager_cpu) break;
    if (g->automaton_.HasBytes(s)) g->ComputeMask(s);
  }
  return g;
}

const StateMask& CompiledGrammar::ComputeMask(int32_t s) const {
  std::lock_guard lock(mu_);
  if (const StateMask* m = ready_[size_t(s)].load(std::memory_order_acquire)) return *m;
  storage_[size_t(s)] = std::make_unique<StateMask>(Classify(automaton_, *vocab_, s, below_, self_loop_));
  ready_[size_t(s)].store(storage_[size_t(s)].get(), std::memory_order_release);
  return *storage_[size_t(s)];
}

int64_t CompiledGrammar::masks_ready() const {
  std::lock_guard lock(mu_);
  int64_t n = 0;
  for (const auto& m : storage_) n += m != nullptr;
  return n;
}

size_t CompiledGrammar::memory_bytes() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& m : storage_)
    if (m) n += m->accepted_bits.size() * 8 + m->accepted.size() * 4 + m->uncertain.size() * 4 + sizeof(StateMask);
  return n;
}

}  // namespace tern::grammar
