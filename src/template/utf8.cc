#include "template/utf8.h"

#include <initializer_list>

#include <utf8proc.h>

namespace tern::jinja::utf8 {

char32_t Decode(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  *len = 1;
  if (b0 < 0x80) return b0;
  int need = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    need = 1;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    need = 2;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    need = 3;
    cp = b0 & 0x07;
  } else {
    return 0xFFFD;
  }
  if (i + need >= s.size()) return 0xFFFD;
  for (int k = 1; k <= need; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0xFFFD;
    cp = (cp << 6) | (b & 0x3F);
  }
  *len = need + 1;
  return cp;
}

void Append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

size_t Length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    Decode(s, i, &len);
    i += len;
    ++n;
  }
  return n;
}

std::vector<size_t> Offsets(std::string_view s) {
  std::vector<size_t> out;
  out.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    out.push_back(i);
    size_t len;
    Decode(s, i, &len);
    i += len;
  }
  out.push_back(s.size());
  return out;
}

bool IsSpace(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static utf8proc_category_t Category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

bool IsAlpha(char32_t c) {
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}
bool IsDigit(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_ND; }
bool IsAlnum(char32_t c) {
  const auto cat = Category(c);
  return IsAlpha(c) || cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
         cat == UTF8PROC_CATEGORY_NO;
}
bool IsUpper(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_LU || Category(c) == UTF8PROC_CATEGORY_LT; }
bool IsLower(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_LL; }
bool IsCased(char32_t c) {
  const auto cat = Category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

bool IsPrintable(char32_t c) {
  if (c == ' ') return true;
  if (c < 0x20 || c == 0x7F) return false;  // (ASCII without a table lookup: repr() calls this per character)
  if (c < 0x7F) return true;
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

// Unicode's XID_Start/XID_Continue (DerivedCoreProperties.txt) from the
// general categories: ID_Start is L* + Nl + Other_ID_Start minus
// Pattern_Syntax; ID_Continue adds Mn, Mc, Nd, Pc and Other_ID_Continue; the
// XID forms drop the few code points whose NFKC form is not an identifier.
static bool InList(char32_t c, std::initializer_list<char32_t> l) {
  for (char32_t x : l) {
    if (x == c) return true;
  }
  return false;
}
static bool NotXid(char32_t c, bool start) {
  if (InList(c, {0x037A, 0x309B, 0x309C, 0xFDFA, 0xFDFB})) return true;
  if (c >= 0xFC5E && c <= 0xFC63) return true;
  if (c >= 0xFE70 && c <= 0xFE7E && c % 2 == 0) return true;
  return start && InList(c, {0x0E33, 0x0EB3, 0xFF9E, 0xFF9F});
}
static bool IdStart(char32_t c) {
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
      return c != 0x2E2F;  // VERTICAL TILDE is Pattern_Syntax
    default:
      return InList(c, {0x1885, 0x1886, 0x2118, 0x212E, 0x309B, 0x309C});
  }
}
bool IsIdentifierStart(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return IdStart(c) && !NotXid(c, true);
}
bool IsIdentifierContinue(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  if (NotXid(c, false)) return false;
  if (IdStart(c)) return true;
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return InList(c, {0x00B7, 0x0387, 0x19DA}) || (c >= 0x1369 && c <= 0x1371);
  }
}

static char32_t ToUpper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}
static char32_t ToLower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}
static char32_t ToTitle(char32_t c) {
  if (c < 0x80) return ToUpper(c);
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
}

// Python's full case mapping differs from the simple one for a few code
// points; U+00DF (sharp s) is the one that shows up in real text.
static void AppendUpper(std::string& out, char32_t c) {
  if (c == 0xDF) {
    out += "SS";
  } else {
    Append(out, ToUpper(c));
  }
}

template <typename F>
static std::string MapChars(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = Decode(s, i, &len);
    if (c == 0xFFFD && len == 1 && static_cast<unsigned char>(s[i]) >= 0x80) {
      out += s[i];  // keep invalid bytes as they are
    } else {
      f(out, c);
    }
    i += len;
  }
  return out;
}

std::string Upper(std::string_view s) {
  return MapChars(s, [](std::string& o, char32_t c) { AppendUpper(o, c); });
}
std::string Lower(std::string_view s) {
  return MapChars(s, [](std::string& o, char32_t c) { Append(o, ToLower(c)); });
}
std::string Title(std::string_view s) {
  bool prev_cased = false;
  return MapChars(s, [&](std::string& o, char32_t c) {
    const char32_t m = prev_cased ? ToLower(c) : ToTitle(c);
    Append(o, m);
    prev_cased = IsCased(m);
  });
}
std::string Capitalize(std::string_view s) {
  bool first = true;
  return MapChars(s, [&](std::string& o, char32_t c) {
    Append(o, first ? ToTitle(c) : ToLower(c));
    first = false;
  });
}

static bool InChars(char32_t c, std::string_view chars) {
  for (size_t i = 0; i < chars.size();) {
    size_t len;
    if (Decode(chars, i, &len) == c) return true;
    i += len;
  }
  return false;
}

std::string_view Strip(std::string_view s, const std::string_view* chars, bool left, bool right) {
  auto drop = [&](char32_t c) { return chars ? InChars(c, *chars) : IsSpace(c); };
  size_t begin = 0;
  if (left) {
    while (begin < s.size()) {
      size_t len;
      const char32_t c = Decode(s, begin, &len);
      if (!drop(c)) break;
      begin += len;
    }
  }
  size_t end = s.size();
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      size_t len;
      const char32_t c = Decode(s, start, &len);
      if (start + len != end) {
        start = end - 1;  // invalid sequence: treat the last byte alone
        if (!(chars == nullptr ? false : InChars(0xFFFD, *chars))) break;
      } else if (!drop(c)) {
        break;
      }
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

}  // namespace tern::jinja::utf8
