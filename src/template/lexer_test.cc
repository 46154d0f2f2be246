// Lexer: token positions, newline normalisation, whitespace control.
#include "template/lexer.h"

#include <gtest/gtest.h>

#include "template/error.h"

namespace tern::jinja {
namespace {

TEST(Lexer, TokenPositions) {
  auto toks = Tokenize("ab\n{{ x.y }}\n  {% if 1 %}");
  // text "ab\n", {{, x, ., y, }}, text "\n" (lstrip removes the spaces), {%, if, 1, %}, eof
  ASSERT_GE(toks.size(), 6u);
  EXPECT_EQ(toks[0].type, TokenType::kText);
  EXPECT_EQ(toks[0].text, "ab\n");
  EXPECT_EQ(toks[1].type, TokenType::kVarBegin);
  EXPECT_EQ(toks[1].line, 2);
  EXPECT_EQ(toks[1].col, 1);
  EXPECT_EQ(toks[2].text, "x");
  EXPECT_EQ(toks[2].col, 4);
  EXPECT_EQ(toks[4].text, "y");
  EXPECT_EQ(toks[4].col, 6);
  const Token& kw = toks[8];
  EXPECT_EQ(kw.text, "if");
  EXPECT_EQ(kw.line, 3);
  EXPECT_EQ(kw.col, 6);
}

TEST(Lexer, NormalizesNewlinesLikePythonSplitlines) {
  EXPECT_EQ(NormalizeNewlines("a\r\nb\rc\n"), "a\nb\nc");
  EXPECT_EQ(NormalizeNewlines("a\n\n"), "a\n");
  EXPECT_EQ(NormalizeNewlines("x\xe2\x80\xa8y"), "x\ny");  // U+2028
  EXPECT_EQ(NormalizeNewlines("no newline"), "no newline");
}

TEST(Lexer, StringEscapes) {
  auto toks = Tokenize(R"({{ 'a\nb\t\'\u00e9\x41\\\q' }})");
  ASSERT_EQ(toks[1].type, TokenType::kString);
  EXPECT_EQ(toks[1].text, "a\nb\t'\xc3\xa9"
                          "A\\\\q");
}

TEST(Lexer, NestedBracesDoNotEndTheTag) {
  auto toks = Tokenize("{{ {'a': {'b': 1}} }}");
  EXPECT_EQ(toks.back().type, TokenType::kEof);
  EXPECT_EQ(toks[toks.size() - 2].type, TokenType::kVarEnd);
}

TEST(Lexer, Errors) {
  try {
    Tokenize("ok\n{{ x ) }}");
    FAIL() << "no error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line, 2);
    EXPECT_EQ(e.col, 6);
    EXPECT_EQ(e.message, "unexpected ')'");
  }
  EXPECT_THROW(Tokenize("{{ 'open"), TemplateError);
  EXPECT_THROW(Tokenize("{% if"), TemplateError);
  EXPECT_THROW(Tokenize("{{ x ! y }}"), TemplateError);
  EXPECT_THROW(Tokenize("{% raw %}never closed"), TemplateError);
}

}  // namespace
}  // namespace tern::jinja
