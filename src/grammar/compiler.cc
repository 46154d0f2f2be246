#include "grammar/compiler.h"

#include <algorithm>

#include <fmt/format.h>

#include "grammar/ebnf_parser.h"
#include "grammar/regex_parser.h"

namespace tern::grammar {

Result<GrammarAst> ConstraintToAst(const ConstraintSpec& spec, size_t max_text_bytes) {
  if (spec.text.size() > max_text_bytes)
    return Status::Errorf("the constraint is {} bytes; at most {} are accepted", spec.text.size(), max_text_bytes);
  switch (spec.kind) {
    case ConstraintKind::kRegex: {
      TERN_ASSIGN_OR_RETURN(Expr e, ParseRegex(spec.text));
      GrammarAst g;
      g.rules.push_back({"root", std::move(e)});
      return g;
    }
    case ConstraintKind::kEbnf: return ParseEbnf(spec.text);
    case ConstraintKind::kJsonSchema: {
      nlohmann::ordered_json schema;
      try {
        schema = nlohmann::ordered_json::parse(spec.text, nullptr, true, false);
      } catch (const std::exception& e) {
        return Status::Errorf("the JSON schema is not valid JSON: {}", e.what());
      }
      TERN_ASSIGN_OR_RETURN(std::string ebnf, JsonSchemaToEbnf(schema, spec.json));
      auto ast = ParseEbnf(ebnf);
      if (!ast.ok()) return ast.status().WithContext("internal error: the grammar made from the JSON schema");
      return ast;
    }
  }
  return Status::Error("unknown constraint kind");
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, GrammarCompilerOptions options)
    : vocab_(std::move(vocab)), options_(options) {}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::Compile(const ConstraintSpec& spec) {
  const std::string key = fmt::format("{}|{}|{}|{}", int(spec.kind), int(spec.json.whitespace), spec.json.strict, spec.text);
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.pos);
      return it->second.grammar;
    }
  }
  Result<Automaton> built = Status::Error("");
  {
    // A turn among the concurrent builds, given back however the build ends.
    struct Turn {
      GrammarCompiler& c;
      explicit Turn(GrammarCompiler& compiler) : c(compiler) {
        std::unique_lock lock(c.build_mu_);
        c.build_cv_.wait(lock, [&] { return c.builds_ < std::max(1, c.options_.concurrent_builds); });
        ++c.builds_;
      }
      ~Turn() {
        std::lock_guard lock(c.build_mu_);
        --c.builds_;
        c.build_cv_.notify_one();
      }
    } turn(*this);
    built = [&]() -> Result<Automaton> {
      TERN_ASSIGN_OR_RETURN(GrammarAst ast, ConstraintToAst(spec, options_.max_text_bytes));
      return Automaton::Build(ast, options_.limits);
    }();
  }
  if (!built.ok()) return built.status();
  Automaton a = std::move(*built);
  auto compiled = CompiledGrammar::Create(std::move(a), vocab_, options_.eager_mask_cpu, options_.background_masks);
  std::lock_guard lock(mu_);
  if (cache_.find(key) == cache_.end()) {
    lru_.push_front(key);
    cache_[key] = {compiled, lru_.begin()};
    while (cache_.size() > options_.cache_entries) {
      cache_.erase(lru_.back());
      lru_.pop_back();
    }
  }
  return compiled;
}

}  // namespace tern::grammar
