// Regular expressions (the JavaScript / Python common syntax) to a grammar
// expression over code points:
//   literals and escapes (\n \t \r \f \v \0 \xHH \uHHHH \u{H..} \/ ...),
//   . (any code point but \n \r U+2028 U+2029, as JavaScript's), classes
//   [a-z] [^...] with \d \w \s \D \W \S (\d and \w ASCII, \s JavaScript's
//   Unicode white space), groups ( ) (?: ) (?<name> ), alternation, and
//   the quantifiers * + ? {n} {n,} {n,m} (lazy forms match the same strings).
// ^ and $ are accepted only at the start / end of a top-level alternative.
// Lookaround, backreferences, word boundaries and \p{..} are errors naming
// the construct: a grammar cannot express them (or tern does not yet).
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/ast.h"

namespace tern::grammar {

struct RegexOptions {
  // Search semantics (JSON Schema `pattern`): an alternative without ^ may
  // have anything before it, one without $ anything after it. Otherwise the
  // whole string must match (the SGLang `regex` field, as xgrammar reads it).
  bool search = false;
  // Characters are written as they appear inside a JSON string: '"', '\\'
  // and control characters as JSON.stringify escapes them ("\"" "\\\\"
  // "\\n" "\\u001f").
  bool json_string = false;
};

Result<Expr> ParseRegex(std::string_view pattern, const RegexOptions& options = {});

// The code point ranges of one JSON string character that needs no escape
// ([^"\\\x00-\x1f]), and the expression of one JSON string character in
// any form (plain or escaped).
std::vector<CodeRange> JsonPlainChars();
Expr JsonStringChar();

}  // namespace tern::grammar
