// CompiledGrammar::Create: the per-state token classification, one walk of
// the vocabulary trie per byte-consuming state. A subtree is skipped as soon
// as no stack survives its prefix, so a state that takes few bytes (inside a
// literal) costs little and a state that takes almost anything (inside a
// JSON string) one pass over the trie.
#include "grammar/compiled_grammar.h"

#include "grammar/stack.h"

namespace tern::grammar {

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::Create(
    Automaton automaton, std::shared_ptr<const TokenVocabulary> vocab,
    std::chrono::steady_clock::time_point deadline) {
  auto g = std::shared_ptr<CompiledGrammar>(new CompiledGrammar(std::move(automaton), std::move(vocab)));
  const Automaton& a = g->automaton_;
  const TokenVocabulary& v = *g->vocab_;
  const auto& trie = v.trie();
  const auto& sorted = v.sorted_ids();
  const size_t words = v.mask_words();
  StackPool pool;
  StackRunner runner(a, pool);
  std::vector<PositionSet> sets(v.max_token_bytes() + 1);
  std::vector<int32_t> accepted;
  g->mask_of_.assign(size_t(a.num_states()), -1);
  for (int32_t s = 0; s < a.num_states(); ++s) {
    if (!a.HasBytes(s)) continue;
    if (std::chrono::steady_clock::now() > deadline)
      return Status::Error("the grammar is too large to compile in time");
    pool.Clear();
    StateMask m;
    accepted.clear();
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
      if (node.token_begin < node.token_end) {
        bool inside = false;
        for (int32_t id : cur.nodes) inside = inside || pool.node(id).level == 0;
        for (int32_t k = node.token_begin; k < node.token_end; ++k)
          (inside ? accepted : m.uncertain).push_back(sorted[size_t(k)]);
      }
      ++i;
    }
    if (accepted.size() * 32 > size_t(v.size())) {
      m.accepted_bits.assign(words, 0);
      for (int32_t id : accepted) m.accepted_bits[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
    } else {
      m.accepted = accepted;
    }
    g->mask_of_[size_t(s)] = int32_t(g->masks_.size());
    g->masks_.push_back(std::move(m));
  }
  return std::shared_ptr<const CompiledGrammar>(std::move(g));
}

size_t CompiledGrammar::memory_bytes() const {
  size_t n = 0;
  for (const StateMask& m : masks_)
    n += m.accepted_bits.size() * 8 + m.accepted.size() * 4 + m.uncertain.size() * 4 + sizeof(StateMask);
  return n;
}

}  // namespace tern::grammar
