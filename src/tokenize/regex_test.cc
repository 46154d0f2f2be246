// Regex: Oniguruma-to-PCRE2 translation and match iteration. The expected
// pieces are what Hugging Face tokenizers (Oniguruma) produce: checked with
// the Rust binding's preTokenizeString on the Qwen3 pattern.
#include "tokenize/regex.h"

#include <gtest/gtest.h>

namespace tern::tok {
namespace {

constexpr std::string_view kQwen3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<std::string> Matches(const Regex& r, std::string_view text) {
  std::vector<MatchSpan> spans;
  EXPECT_TRUE(r.FindAll(text, &spans).ok());
  std::vector<std::string> out;
  for (auto [s, e] : spans) out.emplace_back(text.substr(s, e - s));
  return out;
}

TEST(Regex, Translation) {
  auto t = TranslateOnigurumaPattern(R"(\s+|[^\s\p{L}]|\S|\w|[\w-]|\h|\u00e9|[\]\[]|\d)");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_NE(t->find("\\x{85}"), std::string::npos);
  EXPECT_NE(t->find("[^\\x{9}-"), std::string::npos);        // \S outside a class
  EXPECT_NE(t->find("[\\p{L}\\p{M}\\p{Nd}\\p{Pc}-]"), std::string::npos);
  EXPECT_NE(t->find("[0-9a-fA-F]"), std::string::npos);     // Oniguruma \h
  EXPECT_NE(t->find("\\x{00e9}"), std::string::npos);
  EXPECT_NE(t->find("[\\]\\[]"), std::string::npos);
  EXPECT_FALSE(TranslateOnigurumaPattern(R"([^\S])").ok());
  EXPECT_FALSE(TranslateOnigurumaPattern(R"([a[b]])").ok());
  EXPECT_FALSE(TranslateOnigurumaPattern(R"([abc)").ok());
  EXPECT_FALSE(TranslateOnigurumaPattern("abc\\").ok());
  EXPECT_FALSE(Regex::Compile("(unclosed").ok());
}

TEST(Regex, WhiteSpaceIsUnicodeWhiteSpace) {
  auto r = Regex::Compile(R"(\s+)");
  ASSERT_TRUE(r.ok());
  // U+0085 and U+3000 are White_Space; U+FEFF, U+180E and U+200B are not.
  EXPECT_EQ(Matches(*r, "a\xC2\x85" "b"), std::vector<std::string>{"\xC2\x85"});
  EXPECT_EQ(Matches(*r, "a\xE3\x80\x80" "b"), std::vector<std::string>{"\xE3\x80\x80"});
  EXPECT_TRUE(Matches(*r, "a\xEF\xBB\xBF" "b").empty());
  EXPECT_TRUE(Matches(*r, "a\xE1\xA0\x8E" "b").empty());
  EXPECT_TRUE(Matches(*r, "a\xE2\x80\x8B" "b").empty());
}

TEST(Regex, Qwen3PiecesAsOniguruma) {
  auto r = Regex::Compile(kQwen3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Oracle (tokenizers preTokenizeString): "x'ſa" -> x | 'ſ | a (case folding
  // of ſ to s), "a\u0085'T" -> a | \u0085 | 'T.
  EXPECT_EQ(Matches(*r, "x'\xC5\xBF" "a"), (std::vector<std::string>{"x", "'\xC5\xBF", "a"}));
  EXPECT_EQ(Matches(*r, "a\xC2\x85'T"), (std::vector<std::string>{"a", "\xC2\x85", "'T"}));
  EXPECT_EQ(Matches(*r, "Hello  world\n\n"),
            (std::vector<std::string>{"Hello", " ", " world", "\n\n"}));
  EXPECT_EQ(Matches(*r, "123"), (std::vector<std::string>{"1", "2", "3"}));
}

TEST(Regex, EmptyMatchesFollowOniguruma) {
  // An empty match right after the previous match is skipped.
  auto r = Regex::Compile("a*");
  ASSERT_TRUE(r.ok());
  std::vector<MatchSpan> spans;
  ASSERT_TRUE(r->FindAll("baac", &spans).ok());
  EXPECT_EQ(spans, (std::vector<MatchSpan>{{0, 0}, {1, 3}, {4, 4}}));
}

TEST(Regex, LongRunsDoNotFail) {
  auto r = Regex::Compile(kQwen3);
  ASSERT_TRUE(r.ok());
  for (const std::string& text :
       {std::string(300000, ' '), std::string(300000, 'a'), std::string(300000, '!'),
        std::string(300000, '\n'), std::string(100000, ' ') + "x", std::string(200000, '7')}) {
    std::vector<MatchSpan> spans;
    ASSERT_TRUE(r->FindAll(text, &spans).ok());
    size_t covered = 0;
    for (auto [s, e] : spans) covered += e - s;
    EXPECT_EQ(covered, text.size());
  }
}

TEST(Regex, Literal) {
  auto r = Regex::Literal("a.b");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Matches(*r, "a.b axb a.b"), (std::vector<std::string>{"a.b", "a.b"}));
  EXPECT_FALSE(Regex::Literal("").ok());
}

}  // namespace
}  // namespace tern::tok
