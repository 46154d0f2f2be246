// GrammarMatcher: one sequence's position in a compiled grammar. The engine
// asks it for the mask of allowed next tokens before sampling and tells it
// each token sampled. Stop tokens (EOS, end of turn) are allowed exactly when
// the text so far is a complete match; once one is accepted the matcher is
// terminated. Not thread-safe; one per sequence, many per CompiledGrammar.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/stack.h"

namespace tern::grammar {

class GrammarMatcher {
 public:
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::vector<int32_t> stop_tokens);

  // mask: [vocab().mask_words()]; bit id set = token id allowed. Empty when
  // terminated.
  void FillNextTokenMask(std::span<uint64_t> mask);
  // Advances over a token; false (state unchanged) when it is not allowed.
  bool AcceptToken(int32_t id);
  // Advances over raw bytes (tests and conformance checks); false, unchanged, on a mismatch.
  bool AcceptBytes(std::string_view bytes);
  // The bytes so far are a complete match of the grammar.
  bool CanTerminate() const { return !terminated_ && current_.can_end; }
  // More bytes can follow (false once the grammar is complete, or terminated).
  bool CanContinue() const;
  bool IsTerminated() const { return terminated_; }
  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  // Whether the sorted `tokens` are matched from the single position `node`;
  // sets their bits in `mask`.
  void CheckUncertain(int32_t node, std::span<const int32_t> tokens, std::span<uint64_t> mask);
  void MaybeCompact();

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::vector<int32_t> stop_tokens_;
  StackPool pool_;
  StackRunner runner_;
  PositionSet current_;
  bool terminated_ = false;
  std::vector<PositionSet> scratch_;  // per depth, for uncertain checks
  std::vector<StateMask> spill_;      // per node: masks the grammar did not store (FillNextTokenMask)
  std::vector<const StateMask*> masks_;
};

}  // namespace tern::grammar
