// The GPT-2 byte-level alphabet: each byte 0..255 is shown as one printable
// code point (printable Latin-1 bytes as themselves, the others as U+0100 + n),
// so byte-level BPE vocabularies are written as strings ("Ġthe" = " the").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tern::tok {

class ByteLevelAlphabet {
 public:
  // The process-wide tables (built once, thread-safe).
  static const ByteLevelAlphabet& Get();

  char32_t ByteToCodePoint(uint8_t b) const { return byte_to_cp_[b]; }
  // The UTF-8 text of the code point for byte b.
  std::string_view ByteToUtf8(uint8_t b) const {
    return std::string_view(byte_utf8_[b].data(), byte_utf8_len_[b]);
  }
  // The byte shown by code point cp, or -1 when cp is not in the alphabet.
  int CodePointToByte(char32_t cp) const { return cp < kMaxCp ? cp_to_byte_[cp] : -1; }

  // Maps raw bytes to their byte-level string ("\xC4" -> "Ä", " " -> "Ġ").
  std::string Encode(std::string_view bytes) const;
  // Maps a byte-level string back to raw bytes. Returns false (leaving *out
  // unspecified) when `text` is not valid UTF-8 or holds a code point outside
  // the alphabet.
  bool Decode(std::string_view text, std::string* out) const;

 private:
  ByteLevelAlphabet();
  static constexpr char32_t kMaxCp = 0x144;  // 256 + 68 remapped bytes
  std::array<char32_t, 256> byte_to_cp_{};
  std::array<std::array<char, 2>, 256> byte_utf8_{};
  std::array<uint8_t, 256> byte_utf8_len_{};
  std::array<int16_t, kMaxCp> cp_to_byte_{};
};

}  // namespace tern::tok
