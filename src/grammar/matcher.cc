#include "grammar/matcher.h"

#include <algorithm>

namespace tern::grammar {
namespace {
inline void SetBit(std::span<uint64_t> m, int32_t id) { m[size_t(id) >> 6] |= uint64_t(1) << (id & 63); }
inline bool GetBit(std::span<const uint64_t> m, int32_t id) { return (m[size_t(id) >> 6] >> (id & 63)) & 1; }
}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::vector<int32_t> stop_tokens)
    : grammar_(std::move(grammar)),
      stop_tokens_(std::move(stop_tokens)),
      runner_(grammar_->automaton(), pool_, /*max_level=*/0) {
  const Automaton& a = grammar_->automaton();
  current_.nodes = {pool_.Intern(a.RuleStart(a.root_rule()), kBottom)};
  runner_.Close(&current_);
  scratch_.resize(grammar_->vocab().max_token_bytes() + 1);
}

bool GrammarMatcher::CanContinue() const {
  if (terminated_) return false;
  for (int32_t n : current_.nodes)
    if (grammar_->automaton().HasBytes(pool_.node(n).state)) return true;
  return false;
}

void GrammarMatcher::FillNextTokenMask(std::span<uint64_t> mask) {
  std::fill(mask.begin(), mask.end(), 0);
  if (terminated_) return;
  const Automaton& a = grammar_->automaton();
  const int32_t V = grammar_->vocab().size();
  // Each node's mask (a stored one, or one computed into spill_ past the
  // grammar's memory budget), kept for the uncertain checks below.
  const size_t nodes = current_.nodes.size();
  if (spill_.size() < nodes) spill_.resize(nodes);
  masks_.assign(nodes, nullptr);
  bool spilled = false;
  for (size_t i = 0; i < nodes; ++i) {
    const int32_t s = pool_.node(current_.nodes[i]).state;
    if (!a.HasBytes(s)) continue;
    // Nodes in one state (different stacks) share a mask computed past the
    // grammar's budget: computed once per call, not once per node. (Only
    // once one was: within the budget a mask costs a lookup.)
    if (spilled) {
      size_t same = 0;
      while (same < i && !(masks_[same] == &spill_[same] && pool_.node(current_.nodes[same]).state == s)) ++same;
      if (same < i) {
        masks_[i] = masks_[same];
        continue;  // (its tokens are already set)
      }
    }
    const StateMask& m = grammar_->mask(s, spill_[i]);
    masks_[i] = &m;
    spilled = spilled || &m == &spill_[i];
    if (!m.accepted_bits.empty()) {
      for (size_t w = 0; w < mask.size(); ++w) mask[w] |= m.accepted_bits[w];
    } else {
      for (int32_t id : m.accepted) SetBit(mask, id);
    }
  }
  pool_.BeginScratch();
  for (size_t i = 0; i < nodes; ++i)
    if (masks_[i] != nullptr && !masks_[i]->uncertain.empty()) CheckUncertain(current_.nodes[i], masks_[i]->uncertain, mask);
  pool_.DropScratch();
  if (current_.can_end)
    for (int32_t id : stop_tokens_)
      if (id >= 0 && id < V) SetBit(mask, id);
}

void GrammarMatcher::CheckUncertain(int32_t node, std::span<const int32_t> tokens, std::span<uint64_t> mask) {
  const TokenVocabulary& v = grammar_->vocab();
  scratch_[0].nodes = {node};
  scratch_[0].unknown = false;
  std::string_view prev;
  size_t valid = 0;  // scratch_[0..valid] hold the positions after prev's first bytes
  for (int32_t id : tokens) {
    const std::string_view b = v.bytes(id);
    size_t lcp = 0;
    const size_t lim = std::min({prev.size(), b.size(), valid});
    while (lcp < lim && prev[lcp] == b[lcp]) ++lcp;
    prev = b;
    if (GetBit(mask, id)) {
      valid = lcp;
      continue;
    }
    size_t d = lcp;
    bool alive = !scratch_[d].nodes.empty();
    while (alive && d < b.size()) {
      runner_.Advance(scratch_[d], uint8_t(b[d]), &scratch_[d + 1]);
      ++d;
      alive = !scratch_[d].nodes.empty();
    }
    valid = d;
    if (alive) SetBit(mask, id);
  }
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) {
  if (terminated_) return false;
  PositionSet next = current_, tmp;
  for (unsigned char c : bytes) {
    runner_.Advance(next, c, &tmp);
    if (tmp.nodes.empty()) return false;
    std::swap(next, tmp);
  }
  current_ = std::move(next);
  MaybeCompact();
  return true;
}

bool GrammarMatcher::AcceptToken(int32_t id) {
  if (terminated_) return false;
  if (std::find(stop_tokens_.begin(), stop_tokens_.end(), id) != stop_tokens_.end()) {
    if (!current_.can_end) return false;
    terminated_ = true;
    return true;
  }
  const TokenVocabulary& v = grammar_->vocab();
  if (id < 0 || id >= v.size() || v.special(id) || v.bytes(id).empty()) return false;
  return AcceptBytes(v.bytes(id));
}

// The pool keeps every stack node ever made; when it grows large, rebuild it
// with only the nodes the current positions use.
void GrammarMatcher::MaybeCompact() {
  if (pool_.size() < (1u << 20)) return;
  StackPool fresh;
  std::vector<int32_t> remap(pool_.size(), -1);
  auto copy = [&](auto&& self, int32_t id) -> int32_t {
    if (id < 0) return id;
    if (remap[size_t(id)] >= 0) return remap[size_t(id)];
    const StackPool::Node n = pool_.node(id);
    return remap[size_t(id)] = fresh.Intern(n.state, self(self, n.parent));
  };
  for (int32_t& n : current_.nodes) n = copy(copy, n);
  pool_ = std::move(fresh);
}

}  // namespace tern::grammar
