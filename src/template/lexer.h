// Lexer: template source -> tokens, with Jinja2's whitespace rules as
// Hugging Face configures them (trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False):
//   - line endings (\r\n, \r and the other Python str.splitlines()
//     boundaries) become \n, and one trailing newline is dropped;
//   - `{%-`, `{{-`, `{#-` strip all whitespace before the tag, `-%}`, `-}}`,
//     `-#}` all whitespace after it;
//   - trim_blocks: the first newline after a block or comment tag is removed
//     (not after `+%}`);
//   - lstrip_blocks: spaces and tabs from the start of the line up to a block
//     or comment tag are removed (not for `{%+`, not for `{{`).
// Comments vanish; `{% raw %}...{% endraw %}` becomes text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::jinja {

enum class TokenType : uint8_t {
  kText,        // literal output
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the decoded value
  kInt,     // text holds the digits (underscores removed)
  kFloat,
  kOp,  // text holds the operator: + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
  kEof,
};

struct Token {
  TokenType type;
  std::string text;
  int line = 1;  // 1-based position in the normalized source
  int col = 1;   // 1-based, in code points
};

// Throws TemplateError (kSyntax) with line and column on an unterminated tag,
// string or comment, or an unexpected character.
std::vector<Token> Tokenize(std::string_view source);

// The source as Jinja2 sees it: line endings normalized, trailing newline dropped.
std::string NormalizeNewlines(std::string_view source);

}  // namespace tern::jinja
