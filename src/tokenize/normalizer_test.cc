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
