// Helpers for the grammar tests: compile a constraint for a vocabulary and
// match raw bytes against it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiler.h"
#include "grammar/matcher.h"

namespace tern::grammar::testing {

// The 256 single-byte tokens, then `extra` tokens; `special` ids marked special.
inline std::shared_ptr<const TokenVocabulary> ByteVocab(const std::vector<std::string>& extra = {},
                                                        const std::vector<int32_t>& special = {}) {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  for (const auto& e : extra) bytes.push_back(e);
  std::vector<bool> sp(bytes.size(), false);
  for (int32_t id : special) sp[size_t(id)] = true;
  return TokenVocabulary::FromBytes(std::move(bytes), std::move(sp));
}

inline Result<std::shared_ptr<const CompiledGrammar>> CompileFor(const ConstraintSpec& spec,
                                                                 std::shared_ptr<const TokenVocabulary> vocab) {
  TERN_ASSIGN_OR_RETURN(GrammarAst ast, ConstraintToAst(spec));
  TERN_ASSIGN_OR_RETURN(Automaton a, Automaton::Build(ast));
  return CompiledGrammar::Create(std::move(a), std::move(vocab), std::chrono::milliseconds(50));
}

// Whether `text` is a complete match.
inline bool FullMatch(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  GrammarMatcher m(g, {});
  return m.AcceptBytes(text) && m.CanTerminate();
}

}  // namespace tern::grammar::testing
