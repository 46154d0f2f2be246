// EBNF text (GBNF / xgrammar syntax) to a GrammarAst:
//
//   root   ::= "{" ws pair ("," ws pair)* "}"   # a comment
//   pair   ::= [a-z]+ ":" ( num | "null" )
//   num    ::= [0-9]{1,5} ("." [0-9]+)?
//
// Rules are `name ::= alternatives`; a rule ends where the next `name ::=`
// starts. Items: "strings" and 'strings' (escapes \n \t \r \\ \" \' \xHH
// \uHHHH \UHHHHHHHH), character classes [a-z\n] and [^...] over code points,
// `.` (any code point), rule names, ( groups ); quantifiers * + ? {n} {n,}
// {n,m}. The start rule is `root`. Errors name the line and column.
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/ast.h"

namespace tern::grammar {

Result<GrammarAst> ParseEbnf(std::string_view text);

// `s` as an EBNF string literal ("..." with escapes), for generated grammars.
std::string EbnfQuote(std::string_view s);

}  // namespace tern::grammar
