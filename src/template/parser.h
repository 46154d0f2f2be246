// Parser: tokens -> syntax tree, following Jinja2's grammar and operator
// precedence (lowest first):
//   a if c else b  <  or  <  and  <  not  <  comparisons, in, not in
//   <  + -  <  ~  <  * / // %  <  **  <  unary - +  <  filters |, tests is,
//   <  postfix . [] ()  <  literals, names, ( )
// so `x|length - 1` is `(x|length) - 1` and `-x|abs` is `(-x)|abs`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "template/ast.h"

namespace tern::jinja {

struct ParsedTemplate {
  Body body;
  // Every identifier the template mentions; NameExpr::sym indexes this.
  std::vector<std::string> symbols;
};

// Throws TemplateError (kSyntax) with line and column.
ParsedTemplate ParseTemplate(std::string_view source);

// Deepest nesting of expressions and blocks the parser accepts; deeper input
// is a syntax error rather than a stack overflow.
inline constexpr int kMaxParseDepth = 200;

}  // namespace tern::jinja
