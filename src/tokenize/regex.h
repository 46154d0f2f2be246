// Regex: the Split pre-tokenizer's pattern, run by PCRE2 (JIT, UTF + UCP).
//
// Hugging Face tokenizers run these patterns with Oniguruma. PCRE2 agrees on
// the constructs tokenizer files use (alternation, classes, \p{..}, (?i:..),
// lookahead, greedy/lazy repeats) once a few escapes whose meaning differs are
// rewritten (see TranslateOnigurumaPattern). Matching is leftmost-first with
// backtracking in both, and the iteration over matches follows Oniguruma's
// find_iter (an empty match right after the previous match is skipped).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tern::tok {

// [begin, end) byte offsets of one match.
using MatchSpan = std::pair<uint32_t, uint32_t>;

// Rewrites an Oniguruma pattern into PCRE2 syntax with the same meaning:
//  \s, \S  -> Unicode White_Space (Oniguruma's \s; PCRE2's UCP \s also takes
//             U+180E and misses nothing else, so an explicit class is exact)
//  \w, \W  -> [\p{L}\p{M}\p{Nd}\p{Pc}] (Oniguruma's Unicode word characters)
//  \h, \H  -> hex digit (Oniguruma) instead of horizontal space (PCRE2)
//  \uHHHH  -> \x{HHHH}
// Negated shorthands inside a class ([^\S]) cannot be expressed in PCRE2 and
// return an error, as do nested classes ([a[b]]).
Result<std::string> TranslateOnigurumaPattern(std::string_view pattern);

class Regex {
 public:
  // Compiles an Oniguruma-syntax pattern (as stored in tokenizer.json).
  static Result<Regex> Compile(std::string_view onig_pattern);
  // A pattern matching `text` literally.
  static Result<Regex> Literal(std::string_view text);

  // Appends every match in `text` (valid UTF-8, checked by the caller) in
  // order. Fails only when PCRE2 gives up (match or stack limit).
  Status FindAll(std::string_view text, std::vector<MatchSpan>* matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  // Compiles a PCRE2 pattern with UTF + UCP and the given extra PCRE2 options.
  static Result<Regex> Build(std::string pcre_pattern, uint32_t extra_options,
                             std::string_view shown_as);
  std::string pattern_;                  // the PCRE2 pattern
  std::shared_ptr<const Compiled> code_;  // immutable, shared by copies
};

}  // namespace tern::tok
