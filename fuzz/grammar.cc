// A structured-output constraint as a client sends it (response_format's
// json_schema, SGLang's regex or ebnf): GrammarCompiler::Compile, then a
// GrammarMatcher walked over up to 48 tokens chosen from its own masks.
//
// Input: byte 0 picks the constraint and its options (bits 0-1: JSON Schema,
// regex, EBNF, JSON Schema again; bits 2-3: the schema's whitespace; bit 4:
// strict off), the rest is the constraint text.
//
// Oracles besides the sanitizers: every token a mask allows is accepted, and
// a few tokens per step are checked both ways (allowed in the mask exactly
// when AcceptToken takes it, on a copy of the matcher); a stop token is
// allowed exactly when the text so far is a complete match.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiler.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"

namespace {

using namespace tern::grammar;

// Every single byte (so any byte string can be spelled), multi-byte pieces
// of JSON, numbers and UTF-8, and one stop token.
const std::shared_ptr<const TokenVocabulary>& Vocab() {
  static const auto vocab = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, char(b));
    for (const char* t : {"{\"", "\"}", "\":", "\": ", "\",", "\", \"", "\":\"", "true", "false", "null", "12",
                          "-0", "0.5", "e+", "1e-3", "[]", "{}", "[{", "}]", "  ", "\n  ", "\\u00", "\\\"", "ab",
                          "abc", "name", "\"name\"", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xc3",
                          "\xa9\"", "::=", "a\"", "\" "})
      bytes.emplace_back(t);
    std::vector<bool> special(bytes.size(), false);
    bytes.emplace_back("<|endoftext|>");
    special.push_back(true);
    return TokenVocabulary::FromBytes(std::move(bytes), std::move(special));
  }();
  return vocab;
}

bool Allowed(const std::vector<uint64_t>& mask, int32_t id) { return (mask[size_t(id) / 64] >> (id % 64)) & 1; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ConstraintSpec spec;
  spec.kind = (mode & 3) == 1 ? ConstraintKind::kRegex : (mode & 3) == 2 ? ConstraintKind::kEbnf
                                                                         : ConstraintKind::kJsonSchema;
  spec.json.whitespace = static_cast<JsonSchemaOptions::Whitespace>(((mode >> 2) & 3) % 3);
  spec.json.strict = !(mode & 16);
  spec.text.assign(reinterpret_cast<const char*>(data + 1), size - 1);

  // Smaller bounds than a server's, so that an input stays well inside the
  // fuzzer's time limit; the same code paths refuse past them.
  GrammarCompilerOptions options;
  options.background_masks = false;
  options.eager_mask_cpu = std::chrono::milliseconds(20);
  options.max_text_bytes = 1 << 14;
  options.limits.max_nfa_states = 200'000;
  options.limits.max_dfa_states = 20'000;
  options.limits.max_subset_work = 2'000'000;
  GrammarCompiler compiler(Vocab(), options);
  auto grammar = compiler.Compile(spec);
  if (!grammar.ok()) return 0;

  const int32_t n = int32_t(Vocab()->size());
  const int32_t stop = n - 1;
  GrammarMatcher matcher(*grammar, {stop});
  std::vector<uint64_t> mask(Vocab()->mask_words());
  uint64_t rng = 0x9E3779B97F4A7C15ull ^ size;
  for (size_t i = 0; i < size; ++i) rng = (rng ^ data[i]) * 0x100000001B3ull;
  auto next = [&rng] {
    rng ^= rng >> 33;
    rng *= 0xff51afd7ed558ccdull;
    rng ^= rng >> 29;
    return rng;
  };
  for (int step = 0; step < 48 && !matcher.IsTerminated(); ++step) {
    matcher.FillNextTokenMask(mask);
    if (Allowed(mask, stop) != matcher.CanTerminate()) std::abort();
    for (int probe = 0; probe < 4; ++probe) {
      const int32_t id = int32_t(next() % uint64_t(n));
      GrammarMatcher copy = matcher;
      if (copy.AcceptToken(id) != Allowed(mask, id)) std::abort();
    }
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < n; ++id)
      if (Allowed(mask, id)) allowed.push_back(id);
    if (allowed.empty()) break;
    // Prefer continuing over stopping, so walks go deep.
    int32_t id = allowed[next() % allowed.size()];
    if (id == stop && allowed.size() > 1 && (next() & 3) != 0) id = allowed[0] == stop ? allowed[1] : allowed[0];
    if (!matcher.AcceptToken(id)) std::abort();
  }
  // Raw bytes (the input's own) through a fresh matcher: accepted or not,
  // never a crash.
  GrammarMatcher raw(*grammar, {stop});
  (void)raw.AcceptBytes(spec.text.substr(0, 256));
  return 0;
}
