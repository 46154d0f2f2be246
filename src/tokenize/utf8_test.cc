// UTF-8 validation and the lossy conversion Hugging Face's decoders use.
// Expected values: the Unicode Standard's examples for "substitution of
// maximal subparts" (Unicode 15, ch. 3.9, tables 3-8 to 3-11), which Rust's
// String::from_utf8_lossy follows, and Rust's documented examples.
#include "tokenize/utf8.h"

#include <gtest/gtest.h>

namespace tern::tok {
namespace {

std::string Lossy(std::string_view s) {
  std::string out;
  AppendUtf8Lossy(s, &out);
  return out;
}

constexpr const char* kR = "\xEF\xBF\xBD";  // U+FFFD

TEST(Utf8, Validation) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ASCII that is longer than eight bytes"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE4\xBD\xA0 \xF0\x9F\x98\x80"));
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("abc\x80"), 3u);           // lone continuation
  EXPECT_EQ(FindInvalidUtf8("\xC0\x80"), 0u);          // overlong NUL
  EXPECT_EQ(FindInvalidUtf8("ab\xE0\x80\x80"), 2u);    // overlong
  EXPECT_EQ(FindInvalidUtf8("\xED\xA0\x80"), 0u);      // surrogate U+D800
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("0123456789\xE4\xBD"), 10u);  // truncated at the end
  EXPECT_EQ(FindInvalidUtf8("\xFF"), 0u);
}

TEST(Utf8, LossyMaximalSubparts) {
  // Unicode table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64
  EXPECT_EQ(Lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            std::string("a") + kR + kR + kR + "b" + kR + "c" + kR + kR + "d");
  // Table 3-9: C0 AF E0 80 BF F0 81 82 41 (non-shortest forms: each byte)
  EXPECT_EQ(Lossy("\xC0\xAF\xE0\x80\xBF\xF0\x81\x82\x41"),
            std::string(kR) + kR + kR + kR + kR + kR + kR + kR + "A");
  // Table 3-10: ED A0 80 ED BF BF ED AF 41 (surrogates: each byte)
  EXPECT_EQ(Lossy("\xED\xA0\x80\xED\xBF\xBF\xED\xAF\x41"),
            std::string(kR) + kR + kR + kR + kR + kR + kR + kR + "A");
  // Table 3-11: F4 91 92 93 FF 41 80 BF 42 (out of range, invalid bytes)
  EXPECT_EQ(Lossy("\xF4\x91\x92\x93\xFF\x41\x80\xBF\x42"),
            std::string(kR) + kR + kR + kR + kR + "A" + kR + kR + "B");
  // Rust docs: b"Hello \xF0\x90\x80World" -> "Hello �World"
  EXPECT_EQ(Lossy("Hello \xF0\x90\x80World"), std::string("Hello ") + kR + "World");
  EXPECT_EQ(Lossy("end\xE4\xBD"), std::string("end") + kR);  // truncated: one U+FFFD
  EXPECT_EQ(Lossy("ok \xC3\xA9"), "ok \xC3\xA9");
}

TEST(Utf8, CompletePrefix) {
  EXPECT_EQ(CompleteUtf8PrefixLength(""), 0u);
  EXPECT_EQ(CompleteUtf8PrefixLength("abc"), 3u);
  EXPECT_EQ(CompleteUtf8PrefixLength("ab\xE4"), 2u);
  EXPECT_EQ(CompleteUtf8PrefixLength("ab\xE4\xBD"), 2u);
  EXPECT_EQ(CompleteUtf8PrefixLength("ab\xE4\xBD\xA0"), 5u);
  EXPECT_EQ(CompleteUtf8PrefixLength("\xF0\x9F\x98"), 0u);
  // Bytes that can never complete a character are not held back.
  EXPECT_EQ(CompleteUtf8PrefixLength("a\x80"), 2u);
  EXPECT_EQ(CompleteUtf8PrefixLength("a\xE4\x41"), 3u);
  EXPECT_EQ(CompleteUtf8PrefixLength("\xE0\x80"), 2u);  // E0 80 is never valid
  EXPECT_EQ(CompleteUtf8PrefixLength("\xED\xA0"), 2u);  // surrogate start
  EXPECT_EQ(CompleteUtf8PrefixLength("\xF5"), 1u);
}

TEST(Utf8, CodePoints) {
  std::string s;
  for (char32_t cp : {char32_t(0x41), char32_t(0xE9), char32_t(0x4F60), char32_t(0x1F600)}) {
    AppendCodePoint(cp, &s);
  }
  EXPECT_EQ(s, "A\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80");
  size_t pos = 0;
  EXPECT_EQ(NextCodePoint(s, &pos), char32_t(0x41));
  EXPECT_EQ(NextCodePoint(s, &pos), char32_t(0xE9));
  EXPECT_EQ(NextCodePoint(s, &pos), char32_t(0x4F60));
  EXPECT_EQ(NextCodePoint(s, &pos), char32_t(0x1F600));
  EXPECT_EQ(pos, s.size());
}

}  // namespace
}  // namespace tern::tok
