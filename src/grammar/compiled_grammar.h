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
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "grammar/automaton.h"
#include "grammar/vocabulary.h"

namespace tern::grammar {

struct StateMask {
  std::vector<uint64_t> accepted_bits;  // dense form ([mask_words]); empty when `accepted` is used
  std::vector<int32_t> accepted;        // sparse form: token ids
  std::vector<int32_t> uncertain;       // token ids in trie (byte) order
};

class CompiledGrammar {
 public:
  // Fails when the precomputation would exceed `deadline` (a grammar too large to serve).
  static Result<std::shared_ptr<const CompiledGrammar>> Create(
      Automaton automaton, std::shared_ptr<const TokenVocabulary> vocab,
      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

  const Automaton& automaton() const { return automaton_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  // The mask of a state with HasBytes(state).
  const StateMask& mask(int32_t state) const { return masks_[size_t(mask_of_[size_t(state)])]; }
  size_t memory_bytes() const;

 private:
  CompiledGrammar(Automaton a, std::shared_ptr<const TokenVocabulary> v) : automaton_(std::move(a)), vocab_(std::move(v)) {}
  Automaton automaton_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<int32_t> mask_of_;  // state -> index in masks_ (-1: no bytes)
  std::vector<StateMask> masks_;
};

}  // namespace tern::grammar
