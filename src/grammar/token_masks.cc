// CompiledGrammar: the per-state token classification, one walk of the
// vocabulary trie per byte-consuming state. A subtree is skipped as soon as
// no stack survives its prefix, so a state that takes few bytes (inside a
// literal) costs little; a subtree whose bytes all loop in a state that
// neither calls nor ends (inside a JSON string) is accepted without a walk.
#include <time.h>

#include <atomic>

#include "grammar/compiled_grammar.h"
#include "grammar/mask_worker.h"
#include "grammar/stack.h"

namespace tern::grammar {
namespace {
std::chrono::nanoseconds ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// The classification of one state's tokens.
//
// The walk keeps, per trie depth, the positions after that prefix. Most of a
// walk stays on one position at the bottom of the state's own rule (inside a
// string, a number, a literal): such a depth keeps just its automaton state
// (raw[d] >= 0; the position is (raw[d], ContextMarker(0)), which neither
// calls nor ends, so its closure is itself) and a child costs one transition
// lookup instead of an Advance (a hash lookup to intern the stack node).
// The positions are interned only where a child leaves that case. A string
// of maxLength 40 has ~40 such states, each walking most of the vocabulary.
// shortcuts = false walks every trie node through the general Advance (the
// reference the tests compare the shortcuts against).
StateMask Classify(const Automaton& a, const TokenVocabulary& v, int32_t s, const std::vector<uint64_t>& below,
                   const std::vector<uint64_t>& self_loop, bool shortcuts = true) {
  const auto& trie = v.trie();
  const auto& sorted = v.sorted_ids();
  const bool fast = shortcuts && !below.empty();
  StackPool pool;
  StackRunner runner(a, pool);
  std::vector<PositionSet> sets(v.max_token_bytes() + 1);
  std::vector<int32_t> raw(v.max_token_bytes() + 1, -1);
  // Accepted tokens as ranges of `sorted` (a subtree's tokens are one range,
  // and neighbouring ranges merge), turned into ids once at the end.
  std::vector<std::pair<int32_t, int32_t>> accepted;
  const auto accept = [&](int32_t begin, int32_t end) {
    if (begin >= end) return;
    if (!accepted.empty() && accepted.back().second == begin) accepted.back().second = end;
    else accepted.emplace_back(begin, end);
  };
  StateMask m;
  const auto simple = [&](int32_t state) { return !a.IsFinal(state) && a.Calls(state).empty(); };
  const auto subtree_tokens = [&](int32_t i) {
    const auto& node = trie[size_t(i)];
    accept(node.token_begin, node.subtree_end < int32_t(trie.size()) ? trie[size_t(node.subtree_end)].token_begin
                                                                      : int32_t(sorted.size()));
  };
  sets[0].nodes = {pool.Intern(s, ContextMarker(0))};
  sets[0].unknown = false;  // (not closed: a state's mask holds its own bytes; callees have theirs)
  if (shortcuts && simple(s)) raw[0] = s;
  for (int32_t i = 1; i < int32_t(trie.size());) {
    const auto& node = trie[size_t(i)];
    const size_t d = node.depth;
    if (const int32_t from = raw[d - 1]; from >= 0) {
      const int32_t t = a.Next(from, node.byte);
      if (t < 0) {
        i = node.subtree_end;  // no token with this prefix can be matched
        continue;
      }
      if (simple(t)) {
        raw[d] = t;
        if (fast && (below[size_t(i)] & ~self_loop[size_t(t)]) == 0) {
          subtree_tokens(i);  // every token at and below this node stays in t: accepted
          i = node.subtree_end;
          continue;
        }
        accept(node.token_begin, node.token_end);
        ++i;
        continue;
      }
      sets[d - 1].nodes = {pool.Intern(from, ContextMarker(0))};  // leaving the simple case here
      sets[d - 1].unknown = false;
      sets[d - 1].can_end = false;
    }
    raw[d] = -1;
    PositionSet& cur = sets[d];
    runner.Advance(sets[d - 1], node.byte, &cur);
    if (cur.nodes.empty() && !cur.unknown) {
      i = node.subtree_end;  // no token with this prefix can be matched
      continue;
    }
    if (cur.nodes.size() == 1 && !cur.unknown) {
      const StackPool::Node p = pool.node(cur.nodes[0]);
      if (simple(p.state)) {
        // Back in the simple case (children take the fast path), and a subtree
        // whose bytes all loop in this state is accepted whole.
        if (shortcuts && p.parent == ContextMarker(0)) raw[d] = p.state;
        if (fast && p.level == 0 && (below[size_t(i)] & ~self_loop[size_t(p.state)]) == 0) {
          subtree_tokens(i);
          i = node.subtree_end;
          continue;
        }
      }
    }
    if (node.token_begin < node.token_end) {
      bool inside = false;
      for (int32_t id : cur.nodes) inside = inside || pool.node(id).level == 0;
      if (inside) accept(node.token_begin, node.token_end);
      else
        for (int32_t k = node.token_begin; k < node.token_end; ++k) m.uncertain.push_back(sorted[size_t(k)]);
    }
    ++i;
  }
  size_t count = 0;
  for (const auto& [b, e] : accepted) count += size_t(e - b);
  if (count * 32 > size_t(v.size())) {
    m.accepted_bits.assign(v.mask_words(), 0);
    for (const auto& [b, e] : accepted)
      for (int32_t k = b; k < e; ++k) {
        const int32_t id = sorted[size_t(k)];
        m.accepted_bits[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
      }
  } else {
    m.accepted.reserve(count);
    for (const auto& [b, e] : accepted)
      for (int32_t k = b; k < e; ++k) m.accepted.push_back(sorted[size_t(k)]);
  }
  return m;
}
// FNV-1a over the mask's three lists (with their lengths, so the split between them counts).
uint64_t ContentHash(const StateMask& m) {
  uint64_t h = 1469598103934665603ull;
  auto add = [&](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  for (size_t n : {m.accepted_bits.size(), m.accepted.size(), m.uncertain.size()}) add(&n, sizeof n);
  add(m.accepted_bits.data(), m.accepted_bits.size() * sizeof(uint64_t));
  add(m.accepted.data(), m.accepted.size() * sizeof(int32_t));
  add(m.uncertain.data(), m.uncertain.size() * sizeof(int32_t));
  return h;
}
// What a stored mask holds: its lists' capacity (ComputeMask shrinks them to
// their size first), the mask itself, and its unique_ptr and by_content_ entry
// (a node of about four words).
size_t MaskBytes(const StateMask& m) {
  return m.accepted_bits.capacity() * 8 + m.accepted.capacity() * 4 + m.uncertain.capacity() * 4 +
         sizeof(StateMask) + sizeof(void*) * 5;
}

std::atomic<size_t> process_mask_bytes{0};
std::atomic<size_t> process_mask_budget{size_t(1) << 30};
}  // namespace

void CompiledGrammar::SetProcessMaskBudget(size_t bytes) { process_mask_budget.store(bytes); }
size_t CompiledGrammar::ProcessMaskBudget() { return process_mask_budget.load(); }
size_t CompiledGrammar::ProcessMaskBytes() { return process_mask_bytes.load(); }

CompiledGrammar::~CompiledGrammar() { process_mask_bytes.fetch_sub(stored_bytes_); }

CompiledGrammar::CompiledGrammar(Automaton a, std::shared_ptr<const TokenVocabulary> v)
    : automaton_(std::move(a)), vocab_(std::move(v)) {
  const int32_t S = automaton_.num_states();
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
                                                               std::chrono::nanoseconds eager_cpu,
                                                               bool background, size_t max_mask_bytes) {
  auto g = std::shared_ptr<CompiledGrammar>(new CompiledGrammar(std::move(automaton), std::move(vocab)));
  g->max_mask_bytes_ = max_mask_bytes;
  const auto start = ThreadCpu();
  for (int32_t s = 0; s < g->automaton_.num_states(); ++s) {
    if (eager_cpu != std::chrono::nanoseconds::max() && ThreadCpu() - start > eager_cpu) {
      if (background) MaskWorker::Get().Add(g);
      break;
    }
    // Past the budget the rest are computed when a matcher needs them.
    if (g->automaton_.HasBytes(s) && !g->Precompute(s)) break;
  }
  return g;
}

bool CompiledGrammar::Precompute(int32_t s) const {
  return ready_[size_t(s)].load(std::memory_order_acquire) != nullptr || ComputeMask(s, nullptr) != nullptr;
}

const StateMask* CompiledGrammar::ComputeMask(int32_t s, StateMask* spill) const {
  // Classify reads only what the constructor made; the lock guards publication.
  StateMask m = Classify(automaton_, *vocab_, s, below_, self_loop_);
  const uint64_t h = ContentHash(m);
  std::lock_guard lock(mu_);
  if (const StateMask* r = ready_[size_t(s)].load(std::memory_order_acquire)) return r;  // another thread was first
  const StateMask* shared = nullptr;
  for (auto [it, end] = by_content_.equal_range(h); it != end && !shared; ++it)
    if (*it->second == m) shared = it->second;
  if (!shared) {
    // A new mask: stored if this grammar's budget and the process's allow
    // (the process's total is reserved first, so concurrent grammars never
    // pass it together).
    m.accepted_bits.shrink_to_fit();
    m.accepted.shrink_to_fit();
    m.uncertain.shrink_to_fit();
    const size_t bytes = MaskBytes(m);
    bool fits = stored_bytes_ + bytes <= max_mask_bytes_;
    if (fits) {
      const size_t before = process_mask_bytes.fetch_add(bytes);
      fits = before + bytes <= process_mask_budget.load();
      if (!fits) process_mask_bytes.fetch_sub(bytes);
    }
    if (!fits) {
      if (spill == nullptr) return nullptr;
      *spill = std::move(m);
      return spill;
    }
    stored_bytes_ += bytes;
    storage_.push_back(std::make_unique<StateMask>(std::move(m)));
    shared = storage_.back().get();
    by_content_.emplace(h, shared);
  }
  ready_[size_t(s)].store(shared, std::memory_order_release);
  return shared;
}

int64_t CompiledGrammar::masks_ready() const {
  int64_t n = 0;
  for (int32_t s = 0; s < automaton_.num_states(); ++s) n += ready_[size_t(s)].load(std::memory_order_acquire) != nullptr;
  return n;
}

StateMask CompiledGrammar::ClassifyForTest(int32_t state, bool shortcuts) const {
  return Classify(automaton_, *vocab_, state, below_, self_loop_, shortcuts);
}

int64_t CompiledGrammar::masks_total() const {
  int64_t n = 0;
  for (int32_t s = 0; s < automaton_.num_states(); ++s) n += automaton_.HasBytes(s);
  return n;
}

size_t CompiledGrammar::memory_bytes() const {
  std::lock_guard lock(mu_);
  return stored_bytes_;
}

size_t CompiledGrammar::total_bytes() const {
  const size_t states = size_t(automaton_.num_states());
  return automaton_.memory_bytes() + (below_.capacity() + self_loop_.capacity()) * sizeof(uint64_t) +
         states * sizeof(std::atomic<const StateMask*>) + memory_bytes();
}

}  // namespace tern::grammar
