#include "grammar/compiler.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "base/json_linear.h"
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
      // Linear in the schema's keys (nlohmann's own parse scans an ordered
      // object's keys for each new one: ~14 s for 95k properties).
      nlohmann::ordered_json schema;
      std::string error;
      if (!ParseJsonLinear(spec.text, &schema, nullptr, &error))
        return Status::Errorf("the JSON schema is not valid JSON: {}", error);
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
  // The cached grammar or refusal, most recently used first.
  auto cached = [&]() -> std::optional<Result<std::shared_ptr<const CompiledGrammar>>> {
    std::lock_guard lock(mu_);
    auto it = cache_.find(key);
    if (it == cache_.end()) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second.pos);
    if (it->second.grammar) return it->second.grammar;
    return Status::Error(it->second.error);
  };
  if (auto hit = cached()) return std::move(*hit);
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
  if (auto hit = cached()) return std::move(*hit);  // built (or refused) while this one waited
  Result<Automaton> built = [&]() -> Result<Automaton> {
    TERN_ASSIGN_OR_RETURN(GrammarAst ast, ConstraintToAst(spec, options_.max_text_bytes));
    return Automaton::Build(ast, options_.limits);
  }();
  Entry entry;
  if (built.ok())
    entry.grammar = CompiledGrammar::Create(std::move(*built), vocab_, options_.eager_mask_cpu, options_.background_masks,
                                            options_.max_mask_bytes);
  else
    entry.error = built.status().message();  // the same text fails the same way: refused again at once
  std::lock_guard lock(mu_);
  if (cache_.find(key) == cache_.end()) {
    lru_.push_front(key);
    entry.pos = lru_.begin();
    cache_[key] = entry;
    size_t cached_bytes = 0;
    const auto bytes_of = [](const std::string& text, const Entry& e) {  // (the text twice: the key and lru_)
      return 2 * text.size() + (e.grammar ? e.grammar->total_bytes() : e.error.size());
    };
    for (const auto& [text, e] : cache_) cached_bytes += bytes_of(text, e);
    const auto over_memory = [&] {
      return cached_bytes > options_.cache_bytes ||
             CompiledGrammar::ProcessMaskBytes() > CompiledGrammar::ProcessMaskBudget() / 4 * 3;
    };
    const auto drop = [&](std::list<std::string>::iterator pos) {
      const auto victim = cache_.find(*pos);
      cached_bytes -= std::min(cached_bytes, bytes_of(victim->first, victim->second));  // (masks may have grown since)
      cache_.erase(victim);
      lru_.erase(pos);
    };
    while (cache_.size() > options_.cache_entries) drop(std::prev(lru_.end()));
    // Past the memory budgets, the least recently used grammars that only
    // the cache holds go (dropping one a request still uses would free
    // nothing, and the next request for it would build a second copy); the
    // newest stays.
    if (over_memory()) {
      std::vector<std::list<std::string>::iterator> unheld;  // least recently used first
      for (auto pos = lru_.end(); pos != lru_.begin();) {
        --pos;
        const Entry& e = cache_.find(*pos)->second;
        if (pos != lru_.begin() && (!e.grammar || e.grammar.use_count() == 1)) unheld.push_back(pos);
      }
      for (auto pos : unheld) {
        if (!over_memory()) break;
        drop(pos);
      }
    }
  }
  if (!entry.grammar) return Status::Error(entry.error);
  return entry.grammar;
}

}  // namespace tern::grammar
