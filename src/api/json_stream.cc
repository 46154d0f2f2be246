#include "api/json_stream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api/py_text.h"

namespace tern::api {
namespace {

constexpr size_t kMaxDepth = 512;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool ValidJsonNumber(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  if (i >= s.size()) return false;
  if (s[i] == '0') {
    ++i;
  } else if (IsDigit(s[i])) {
    while (i < s.size() && IsDigit(s[i])) ++i;
  } else {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || !IsDigit(s[i])) return false;
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (i >= s.size() || !IsDigit(s[i])) return false;
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  return i == s.size();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool JsonStreamWriter::Fail() {
  failed_ = true;
  return false;
}

void JsonStreamWriter::EndValue() {
  events_.push_back({EventKind::kValueEnd, depth(), out_.size()});
  if (stack_.empty()) done_ = true;
  else expect_ = Expect::kCommaOrClose;
}

bool JsonStreamWriter::StartValue(char c) {
  events_.push_back({EventKind::kValueBegin, depth(), out_.size()});
  switch (c) {
    case '{':
    case '[':
      if (stack_.size() >= kMaxDepth) return Fail();
      out_.push_back(c);
      stack_.push_back(c == '{' ? Ctx::kObject : Ctx::kArray);
      expect_ = c == '{' ? Expect::kKeyOrClose : Expect::kValueOrClose;
      return true;
    case '"':
      out_.push_back('"');
      scalar_ = Scalar::kString;
      return true;
    case 't': literal_ = "true"; break;
    case 'f': literal_ = "false"; break;
    case 'n': literal_ = "null"; break;
    default:
      if (c == '-' || IsDigit(c)) {
        scalar_ = Scalar::kNumber;
        token_.assign(1, c);
        return true;
      }
      return Fail();
  }
  scalar_ = Scalar::kLiteral;
  token_.assign(1, c);
  return true;
}

bool JsonStreamWriter::FinishNumber() {
  scalar_ = Scalar::kNone;
  if (!ValidJsonNumber(token_)) return Fail();
  if (token_.find_first_of(".eE") != std::string::npos) {
    const double d = std::strtod(token_.c_str(), nullptr);
    if (std::isinf(d)) out_ += d < 0 ? "-Infinity" : "Infinity";
    else out_ += PyFloatRepr(d);
  } else {
    const bool neg = token_[0] == '-';
    const std::string digits = neg ? token_.substr(1) : token_;
    if (digits == "0") out_ += "0";
    else {
      if (neg) out_.push_back('-');
      out_ += digits;
    }
  }
  EndValue();
  return true;
}

void JsonStreamWriter::WriteCodePoint(unsigned cp, bool lone_surrogate) {
  if (lone_surrogate) cp = 0xFFFD;  // strict JSON parsers reject lone surrogates
  char utf8[4];
  int n = 0;
  if (cp < 0x80) {
    utf8[n++] = static_cast<char>(cp);
  } else if (cp < 0x800) {
    utf8[n++] = static_cast<char>(0xC0 | (cp >> 6));
    utf8[n++] = static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    utf8[n++] = static_cast<char>(0xE0 | (cp >> 12));
    utf8[n++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    utf8[n++] = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    utf8[n++] = static_cast<char>(0xF0 | (cp >> 18));
    utf8[n++] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    utf8[n++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    utf8[n++] = static_cast<char>(0x80 | (cp & 0x3F));
  }
  const std::string_view bytes(utf8, n);
  if (scalar_ == Scalar::kKeyString) key_.append(bytes);
  std::string escaped;
  AppendPyJsonString(&escaped, bytes);
  out_.append(escaped, 1, escaped.size() - 2);  // without the quotes
}

bool JsonStreamWriter::PushStringByte(char c) {
  if (hex_left_ > 0) {
    const int h = HexValue(c);
    if (h < 0) return Fail();
    hex_value_ = hex_value_ * 16 + static_cast<unsigned>(h);
    if (--hex_left_ > 0) return true;
    const unsigned cu = hex_value_;
    if (high_surrogate_) {
      const unsigned high = high_surrogate_;
      high_surrogate_ = 0;
      if (cu >= 0xDC00 && cu <= 0xDFFF) {
        WriteCodePoint(0x10000 + ((high - 0xD800) << 10) + (cu - 0xDC00), false);
        return true;
      }
      WriteCodePoint(high, true);
    }
    if (cu >= 0xD800 && cu <= 0xDBFF) {
      high_surrogate_ = cu;
      expect_low_backslash_ = true;
    } else {
      WriteCodePoint(cu, cu >= 0xDC00 && cu <= 0xDFFF);
    }
    return true;
  }
  if (expect_low_backslash_) {
    expect_low_backslash_ = false;
    if (c == '\\') {
      expect_low_u_ = true;
      return true;
    }
    WriteCodePoint(high_surrogate_, true);
    high_surrogate_ = 0;
  } else if (expect_low_u_) {
    expect_low_u_ = false;
    if (c == 'u') {
      hex_left_ = 4;
      hex_value_ = 0;
      return true;
    }
    WriteCodePoint(high_surrogate_, true);
    high_surrogate_ = 0;
    escape_ = true;  // the backslash was consumed; c is the escaped char
  }
  if (escape_) {
    escape_ = false;
    char raw;
    switch (c) {
      case '"': raw = '"'; break;
      case '\\': raw = '\\'; break;
      case '/': raw = '/'; break;
      case 'b': raw = '\b'; break;
      case 'f': raw = '\f'; break;
      case 'n': raw = '\n'; break;
      case 'r': raw = '\r'; break;
      case 't': raw = '\t'; break;
      case 'u':
        hex_left_ = 4;
        hex_value_ = 0;
        return true;
      default: return Fail();
    }
    WriteCodePoint(static_cast<unsigned char>(raw), false);
    return true;
  }
  if (c == '\\') {
    escape_ = true;
    return true;
  }
  if (c == '"') {
    out_.push_back('"');
    if (scalar_ == Scalar::kKeyString) {
      scalar_ = Scalar::kNone;
      events_.push_back({EventKind::kKey, depth(), out_.size()});
      expect_ = Expect::kColon;
    } else {
      scalar_ = Scalar::kNone;
      EndValue();
    }
    return true;
  }
  // A raw byte (UTF-8 continuation bytes included): escaped as needed.
  if (scalar_ == Scalar::kKeyString) key_.push_back(c);
  std::string escaped;
  AppendPyJsonString(&escaped, std::string_view(&c, 1));
  out_.append(escaped, 1, escaped.size() - 2);
  return true;
}

bool JsonStreamWriter::Push(char c) {
  events_.clear();
  if (failed_ || done_) return false;
  switch (scalar_) {
    case Scalar::kString:
    case Scalar::kKeyString:
      return PushStringByte(c);
    case Scalar::kLiteral:
      if (c != literal_[token_.size()]) return Fail();
      token_.push_back(c);
      if (token_.size() == std::strlen(literal_)) {
        out_ += literal_;
        scalar_ = Scalar::kNone;
        EndValue();
      }
      return true;
    case Scalar::kNumber:
      if (IsDigit(c) || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E') {
        token_.push_back(c);
        return true;
      }
      if (!FinishNumber()) return false;
      if (done_) return true;  // the byte after a top-level number is not ours
      break;
    case Scalar::kNone:
      break;
  }
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return true;
  switch (expect_) {
    case Expect::kValueOrClose:
      if (c == ']') break;
      return StartValue(c);
    case Expect::kValue:
      return StartValue(c);
    case Expect::kKeyOrClose:
    case Expect::kKey:
      if (c == '}' && expect_ == Expect::kKeyOrClose) break;
      if (c != '"') return Fail();
      out_.push_back('"');
      key_.clear();
      scalar_ = Scalar::kKeyString;
      return true;
    case Expect::kColon:
      if (c != ':') return Fail();
      out_ += ": ";
      expect_ = Expect::kValue;
      return true;
    case Expect::kCommaOrClose:
      if (c == ',') {
        out_ += ", ";
        expect_ = stack_.back() == Ctx::kObject ? Expect::kKey : Expect::kValue;
        return true;
      }
      break;
  }
  // A closing bracket.
  if (stack_.empty()) return Fail();
  const Ctx top = stack_.back();
  if ((c == '}' && top != Ctx::kObject) || (c == ']' && top != Ctx::kArray) ||
      (c != '}' && c != ']'))
    return Fail();
  out_.push_back(c);
  stack_.pop_back();
  EndValue();
  return true;
}

bool JsonStreamWriter::Finish() {
  events_.clear();
  if (!failed_ && !done_ && scalar_ == Scalar::kNumber && stack_.empty()) FinishNumber();
  return done_;
}

}  // namespace tern::api
