// Errors inside the template engine.
//
// The lexer, parser and evaluator are deeply recursive; threading a Result
// through every expression node would double the size of the interpreter and
// slow the hot path. So, as the one exception to tern's Status style, they
// throw TemplateError, and the public entry points (Template::Parse,
// Template::Render) catch it and return a Status. No exception leaves the
// module.
#pragma once

#include <string>
#include <utility>

namespace tern::jinja {

struct TemplateError {
  enum class Type { kSyntax, kRender, kRaised, kLimit };
  Type type = Type::kRender;
  std::string message;
  int line = 0;  // 1-based; 0 when unknown
  int col = 0;
};

[[noreturn]] inline void ThrowSyntax(std::string message, int line, int col) {
  throw TemplateError{TemplateError::Type::kSyntax, std::move(message), line, col};
}
// A render-time error; the evaluator fills in the location of the innermost
// statement or expression being evaluated.
[[noreturn]] inline void ThrowRender(std::string message) {
  throw TemplateError{TemplateError::Type::kRender, std::move(message), 0, 0};
}
[[noreturn]] inline void ThrowLimit(std::string message) {
  throw TemplateError{TemplateError::Type::kLimit, std::move(message), 0, 0};
}

}  // namespace tern::jinja
