// Normalizer: the NFC fast path (IsNfcStable) against utf8proc's full NFC,
// its reference; and the forms and Sequence parsing.
#include "tokenize/normalizer.h"

#include <cstdlib>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "tokenize/utf8.h"

namespace tern::tok {
namespace {

std::string Utf8procNfc(const std::string& s) {
  utf8proc_uint8_t* dst = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                        utf8proc_ssize_t(s.size()), &dst,
                        utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  EXPECT_GE(n, 0);
  std::string out(reinterpret_cast<const char*>(dst), size_t(n));
  std::free(dst);
  return out;
}

Normalizer Nfc() { return Normalizer::FromJson(nlohmann::json{{"type", "NFC"}}).value(); }

TEST(Normalizer, StableCodePointsAreTheirOwnNfc) {
  int checked = 0;
  for (char32_t cp = 1; cp < 0x10000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    if (!IsNfcStableCodePoint(cp)) continue;
    std::string s;
    AppendCodePoint(cp, &s);
    ASSERT_EQ(Utf8procNfc(s), s) << std::hex << uint32_t(cp);
    ++checked;
  }
  EXPECT_GT(checked, 30000);
}

TEST(Normalizer, FastPathAgreesWithUtf8proc) {
  // Random strings mixing stable characters with marks, jamo, voicing marks
  // and singletons that NFC changes; the fast path must never claim
  // stability for a string NFC changes.
  const std::vector<char32_t> pool = {
      'a', 'e', 'K', ' ', 0xE9, 0x2B0, 0x301, 0x308, 0x323, 0x3099, 0x309A, 0x304B, 0x30AB,
      0x4E2D, 0xAC00, 0x1100, 0x1161, 0x11A8, 0x212B, 0x2126, 0x212A, 0x302A, 0xFF21,
      0x3000, 0x2000, 0x0387, 0x1E63, 0x0915, 0x093C, 0xFB01};
  std::mt19937 rng(17);
  const Normalizer nfc = Nfc();
  int stable = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string s;
    const int n = 1 + int(rng() % 6);
    for (int i = 0; i < n; ++i) AppendCodePoint(pool[rng() % pool.size()], &s);
    const std::string want = Utf8procNfc(s);
    if (IsNfcStable(s)) {
      ++stable;
      ASSERT_EQ(want, s);
    }
    std::string got;
    ASSERT_TRUE(nfc.Apply(s, &got).ok());
    ASSERT_EQ(got, want);
  }
  EXPECT_GT(stable, 100);
}

std::string Utf8procMap(const std::string& s, utf8proc_option_t options) {
  utf8proc_uint8_t* dst = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), utf8proc_ssize_t(s.size()), &dst,
                        utf8proc_option_t(UTF8PROC_STABLE | options));
  EXPECT_GE(n, 0);
  std::string out(reinterpret_cast<const char*>(dst), size_t(n));
  std::free(dst);
  return out;
}

// Every form equals utf8proc_map (which orders combining marks by swapping
// neighbours, quadratic in a run of them; tern sorts each run): random strings
// with long runs of marks of different combining classes, characters whose
// decomposition starts or is made of non-starters (U+0344, U+0F73, U+0F75,
// U+0F81), Hangul syllables and jamo, compatibility characters.
TEST(Normalizer, EveryFormEqualsUtf8procMap) {
  const std::vector<char32_t> pool = {
      'a', 'o', 'A', ' ', 0xE9, 0x1E63, 0x301, 0x300, 0x308, 0x316, 0x323, 0x327, 0x35C, 0x345, 0x5B0, 0x5B8,
      0x344, 0xF73, 0xF75, 0xF81, 0xF71, 0xF72, 0x93C, 0x3099, 0x304B, 0xAC00, 0xAC01, 0x1100, 0x1161, 0x11A8,
      0xFB01, 0x2460, 0x212B, 0x1F80, 0x3B1};
  const std::pair<const char*, utf8proc_option_t> forms[] = {
      {"NFC", UTF8PROC_COMPOSE}, {"NFD", UTF8PROC_DECOMPOSE},
      {"NFKC", utf8proc_option_t(UTF8PROC_COMPOSE | UTF8PROC_COMPAT)},
      {"NFKD", utf8proc_option_t(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT)}};
  std::mt19937 rng(23);
  for (const auto& [name, options] : forms) {
    const Normalizer norm = Normalizer::FromJson(nlohmann::json{{"type", name}}).value();
    for (int trial = 0; trial < 4000; ++trial) {
      std::string s;
      const int n = 1 + int(rng() % 40);
      for (int i = 0; i < n; ++i) AppendCodePoint(pool[rng() % pool.size()], &s);
      std::string got;
      ASSERT_TRUE(norm.Apply(s, &got).ok());
      ASSERT_EQ(got, Utf8procMap(s, options)) << name << " trial " << trial;
    }
  }
}

// "a", k x U+0301 (class 230), k x U+0316 (class 220): the marks' order is
// reversed, which took utf8proc_map ~k^2 / 2 swaps (k = 20,000: 8 s). NFC of it
// is U+00E1 (a + the first U+0301: U+0316's lower class does not block them),
// the k U+0316, then the other k - 1 U+0301; utf8proc_map agrees at k = 50.
TEST(Normalizer, LongRunsOfMarksAreOrderedInLinearTime) {
  auto text = [](int k) {
    std::string s = "a";
    for (int i = 0; i < k; ++i) AppendCodePoint(0x301, &s);
    for (int i = 0; i < k; ++i) AppendCodePoint(0x316, &s);
    return s;
  };
  auto expected = [](int k) {
    std::string s;
    AppendCodePoint(0xE1, &s);
    for (int i = 0; i < k; ++i) AppendCodePoint(0x316, &s);
    for (int i = 1; i < k; ++i) AppendCodePoint(0x301, &s);
    return s;
  };
  ASSERT_EQ(Utf8procNfc(text(50)), expected(50));
  std::string got;
  ASSERT_TRUE(Nfc().Apply(text(200000), &got).ok());
  EXPECT_EQ(got, expected(200000));
}

TEST(Normalizer, FormsAndSequence) {
  auto seq = Normalizer::FromJson(
      nlohmann::json::parse(R"({"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"NFD"}]})"));
  ASSERT_TRUE(seq.ok());
  std::string out;
  ASSERT_TRUE(seq->Apply("\xEF\xAC\x81\xC3\xA9", &out).ok());  // "ﬁé"
  EXPECT_EQ(out, "fie\xCC\x81");
  auto none = Normalizer::FromJson(nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->is_identity());
  EXPECT_FALSE(Normalizer::FromJson(nlohmann::json{{"type", "Lowercase"}}).ok());
  EXPECT_FALSE(Normalizer::FromJson(nlohmann::json{{"type", "Sequence"}}).ok());
}

}  // namespace
}  // namespace tern::tok
