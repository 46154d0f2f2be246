#include "check/json_text.h"

#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "base/json_linear.h"

namespace tern::check {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
size_t ValidUtf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

int HexValue(std::string_view s, size_t i) {  // 4 hex digits at s[i], or -1
  if (i + 4 > s.size()) return -1;
  int v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    char c = s[k];
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

int RepairUtf8(std::string_view in, std::string* out) {
  int bad = 0;
  out->reserve(out->size() + in.size());
  for (size_t i = 0; i < in.size();) {
    size_t n = ValidUtf8Length(in, i);
    if (n == 0) {
      ++bad;
      out->append(kReplacement);
      ++i;
      // Swallow continuation bytes of the same broken sequence.
      while (i < in.size() && (static_cast<unsigned char>(in[i]) & 0xC0) == 0x80) ++i;
    } else {
      out->append(in.substr(i, n));
      i += n;
    }
  }
  return bad;
}

SanitizedJson SanitizeJson(std::string_view raw) {
  SanitizedJson out;
  std::string repaired;
  out.invalid_utf8 = RepairUtf8(raw, &repaired);
  std::string_view s = repaired;
  std::string& t = out.text;
  t.reserve(s.size());
  bool in_string = false;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (in_string) {
      if (c == '"') {
        in_string = false;
        t.push_back(c);
        ++i;
      } else if (c == '\\' && i + 1 < s.size()) {
        if (s[i + 1] == 'u') {
          int v = HexValue(s, i + 2);
          if (v >= 0xD800 && v <= 0xDBFF) {
            // A high surrogate must be followed by a low one.
            int w = (i + 7 < s.size() && s[i + 6] == '\\' && s[i + 7] == 'u') ? HexValue(s, i + 8) : -1;
            if (w >= 0xDC00 && w <= 0xDFFF) {
              t.append(s.substr(i, 12));
              i += 12;
              continue;
            }
            t.append("\\ufffd");
            ++out.invalid_utf8;
            i += 6;
            continue;
          }
          if (v >= 0xDC00 && v <= 0xDFFF) {
            t.append("\\ufffd");
            ++out.invalid_utf8;
            i += 6;
            continue;
          }
        }
        t.append(s.substr(i, 2));
        i += 2;
      } else {
        t.push_back(c);
        ++i;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      t.push_back(c);
      ++i;
      continue;
    }
    // A bare word outside a string: a non-finite number written by Python or C?
    static constexpr const char* kWords[] = {"-Infinity", "Infinity", "-NaN", "NaN", "-nan", "nan", "-inf", "inf"};
    bool replaced = false;
    if (c == 'N' || c == 'I' || c == 'n' || c == 'i' || c == '-') {
      const bool word_start = t.empty() || !IsWordChar(t.back());
      for (const char* w : kWords) {
        size_t n = std::strlen(w);
        if (word_start && s.compare(i, n, w) == 0 && (i + n == s.size() || !IsWordChar(s[i + n]))) {
          t.append("null");
          ++out.nonfinite;
          i += n;
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) {
      t.push_back(c);
      ++i;
    }
  }
  return out;
}

std::optional<nlohmann::json> ParseJsonLenient(std::string_view raw, SanitizedJson* info) {
  // A server's reply nesting past any real one is not taken: dumping or
  // copying the parsed value recurses once per level (10^6 '[' crashed tern check).
  if (JsonNestingDepth(raw) > kMaxReplyNesting) return std::nullopt;
  SanitizedJson s = SanitizeJson(raw);
  nlohmann::json j = nlohmann::json::parse(s.text, nullptr, /*allow_exceptions=*/false);
  if (info) *info = std::move(s);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

const nlohmann::json& JsonField(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::optional<std::string> JsonString(const nlohmann::json& obj, const char* key) {
  const auto& v = JsonField(obj, key);
  if (!v.is_string()) return std::nullopt;
  return v.get<std::string>();
}

std::optional<int64_t> JsonInt(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {  // before is_number_integer, which is true for unsigned too
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return int64_t(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // Inside int64's range (2^63 is exact in a double) before the cast, which is undefined past it.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return std::nullopt;
    if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<int64_t> JsonInt(const nlohmann::json& obj, const char* key) { return JsonInt(JsonField(obj, key)); }

std::optional<double> JsonNumber(const nlohmann::json& obj, const char* key) {
  const auto& v = JsonField(obj, key);
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

std::string Excerpt(std::string_view text, size_t max) {
  std::string out;
  size_t i = 0;
  for (; i < text.size() && out.size() < max; ++i) {
    char c = text[i];
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += ' ';
    } else if (c == '\xC2' && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      // C1 controls as UTF-8 (U+009B is CSI, which terminals act on too).
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[++i]));
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      // Other control bytes (ESC above all) as text: a server's reply must
      // not move the cursor or recolour the report it is judged in.
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out.push_back(c);
    }
  }
  if (i < text.size()) {
    // Do not cut a UTF-8 sequence in half.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0xC0) out.pop_back();
    out += "...";
  }
  return out;
}

}  // namespace tern::check
