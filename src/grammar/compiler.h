// GrammarCompiler: constraint text (a JSON schema, a regex or an EBNF
// grammar) to a CompiledGrammar for one tokenizer's vocabulary, with a cache
// keyed by the kind, options and text, so repeated schemas compile once.
// Thread-safe. Every failure is a Status whose message can go to the client
// as a 400: bad syntax, an unsupported keyword, a grammar too large
// (inputs are bounded in bytes and automaton states; mask work per state is
// bounded by one walk of the vocabulary).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"

namespace tern::grammar {

enum class ConstraintKind { kJsonSchema, kRegex, kEbnf };

struct ConstraintSpec {
  ConstraintKind kind = ConstraintKind::kJsonSchema;
  std::string text;  // the schema as JSON text, the regex, or the grammar
  JsonSchemaOptions json;
};

struct GrammarCompilerOptions {
  size_t max_text_bytes = 1 << 20;  // larger constraints are refused before parsing
  // CPU time spent on token masks before a grammar is returned; the rest are
  // computed by the background MaskWorker (unless background_masks is false)
  // or as matchers first reach their states, whichever comes first.
  std::chrono::milliseconds eager_mask_cpu{300};
  bool background_masks = true;
  // The cache holds at most this many grammars and, counted when one is
  // added, this much memory (automata, tables and the masks stored so far:
  // 10,000 [^x] of a regex: a 190,000-state automaton of 45 MB); past either, the least
  // recently used are dropped (one still in use is freed when its last
  // request ends). The newest is always kept.
  size_t cache_entries = 256;
  size_t cache_bytes = size_t(1) << 30;
  // The memory one grammar's stored token masks may take (CompiledGrammar::
  // mask); all grammars together take at most CompiledGrammar::
  // ProcessMaskBudget(), and past three quarters of it a new grammar evicts
  // the least recently used ones from the cache too.
  size_t max_mask_bytes = CompiledGrammar::kDefaultMaxMaskBytes;
  GrammarLimits limits;
  // Constraints parsed and built into automata at once (each bounded by
  // `limits` in time and memory, ~1 s and ~100 MB at worst); more wait their
  // turn, and find there what a build of the same text before them made (or
  // refused: refusals are cached too).
  int concurrent_builds = 2;
};

// The constraint as a grammar AST (EBNF for a schema goes through
// JsonSchemaToEbnf); what GrammarCompiler compiles. For tests and tools.
Result<GrammarAst> ConstraintToAst(const ConstraintSpec& spec, size_t max_text_bytes = 1 << 20);

class GrammarCompiler {
 public:
  GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, GrammarCompilerOptions options = {});

  Result<std::shared_ptr<const CompiledGrammar>> Compile(const ConstraintSpec& spec);
  const TokenVocabulary& vocab() const { return *vocab_; }
  std::shared_ptr<const TokenVocabulary> shared_vocab() const { return vocab_; }

 private:
  std::shared_ptr<const TokenVocabulary> vocab_;
  GrammarCompilerOptions options_;
  std::mutex mu_;
  std::mutex build_mu_;  // with build_cv_: builds_ running, at most options_.concurrent_builds
  std::condition_variable build_cv_;
  int builds_ = 0;
  std::list<std::string> lru_;  // most recent first
  struct Entry {
    std::shared_ptr<const CompiledGrammar> grammar;  // null: the text was refused, with `error`
    std::string error;
    std::list<std::string>::iterator pos;
  };
  std::unordered_map<std::string, Entry> cache_;
};

}  // namespace tern::grammar
