// UTF-8 helpers shared by the tokenizer: validation, code point iteration and
// the lossy conversion Hugging Face decoders apply (Rust String::from_utf8_lossy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tern::tok {

// Byte offset of the first invalid UTF-8 sequence in `s`, or s.size() when `s`
// is valid (overlongs, surrogates and code points above U+10FFFF are invalid).
size_t FindInvalidUtf8(std::string_view s);
inline bool IsValidUtf8(std::string_view s) { return FindInvalidUtf8(s) == s.size(); }

// Decodes the code point starting at s[*pos] of VALID UTF-8 and advances *pos.
inline char32_t NextCodePoint(std::string_view s, size_t* pos) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + *pos;
  uint8_t b0 = p[0];
  if (b0 < 0x80) {
    *pos += 1;
    return b0;
  }
  if (b0 < 0xE0) {
    *pos += 2;
    return (char32_t(b0 & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (b0 < 0xF0) {
    *pos += 3;
    return (char32_t(b0 & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  *pos += 4;
  return (char32_t(b0 & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) |
         (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

// Length in bytes of the UTF-8 sequence a lead byte announces (1 for ASCII and
// for bytes that cannot start a sequence).
inline size_t Utf8SequenceLength(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Appends the UTF-8 encoding of `cp` (must be a Unicode scalar value).
void AppendCodePoint(char32_t cp, std::string* out);

// Appends `bytes` to *out, replacing each maximal invalid subsequence with
// U+FFFD exactly as Rust's String::from_utf8_lossy does (the Unicode
// "substitution of maximal subparts" practice).
void AppendUtf8Lossy(std::string_view bytes, std::string* out);

// Length of the longest prefix of `bytes` after which no bytes are "pending":
// the suffix that is cut off is a proper prefix of some valid UTF-8 sequence
// (at most 3 bytes) and may still be completed by later bytes. Invalid bytes
// are not pending: lossy decoding of the prefix is final.
size_t CompleteUtf8PrefixLength(std::string_view bytes);

}  // namespace tern::tok
