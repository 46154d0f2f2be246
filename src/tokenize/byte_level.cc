#include "tokenize/byte_level.h"

#include "tokenize/utf8.h"

namespace tern::tok {

ByteLevelAlphabet::ByteLevelAlphabet() {
  cp_to_byte_.fill(-1);
  auto shown_as_itself = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    byte_to_cp_[b] = shown_as_itself(b) ? char32_t(b) : char32_t(256 + n++);
  }
  for (int b = 0; b < 256; ++b) {
    char32_t cp = byte_to_cp_[b];
    cp_to_byte_[cp] = int16_t(b);
    std::string s;
    AppendCodePoint(cp, &s);
    byte_utf8_len_[b] = uint8_t(s.size());
    for (size_t i = 0; i < s.size(); ++i) byte_utf8_[b][i] = s[i];
  }
}

const ByteLevelAlphabet& ByteLevelAlphabet::Get() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

std::string ByteLevelAlphabet::Encode(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out.append(ByteToUtf8(b));
  return out;
}

bool ByteLevelAlphabet::Decode(std::string_view text, std::string* out) const {
  if (!IsValidUtf8(text)) return false;
  out->clear();
  size_t pos = 0;
  while (pos < text.size()) {
    int b = CodePointToByte(NextCodePoint(text, &pos));
    if (b < 0) return false;
    out->push_back(char(b));
  }
  return true;
}

}  // namespace tern::tok
