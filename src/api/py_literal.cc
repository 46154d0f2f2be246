#include "api/py_literal.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "api/py_text.h"

namespace tern::api {
namespace {

using OJson = nlohmann::ordered_json;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Strip(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Digits in `base` with single underscores between digits; nullopt if not.
std::optional<std::string> StripUnderscores(std::string_view s, int base) {
  std::string out;
  bool prev_digit = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    int v = -1;
    if (IsDigit(c)) v = c - '0';
    else if (std::isalpha(static_cast<unsigned char>(c))) v = std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    if (v >= 0 && v < base) {
      out.push_back(c);
      prev_digit = true;
    } else if (c == '_' && prev_digit && i + 1 < s.size()) {
      prev_digit = false;
    } else {
      return std::nullopt;
    }
  }
  if (out.empty() || !prev_digit) return std::nullopt;
  return out;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class LiteralParser {
 public:
  explicit LiteralParser(std::string_view s) : s_(s) {}

  std::optional<OJson> ParseAll() {
    auto v = Value();
    if (!v) return std::nullopt;
    SkipSpace();
    if (i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void SkipSpace() {
    while (i_ < s_.size()) {
      if (IsSpace(s_[i_])) ++i_;
      else if (s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') i_ += 2;
      else break;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  std::optional<OJson> Value() {
    if (++depth_ > 200) return std::nullopt;
    auto v = ValueInner();
    --depth_;
    return v;
  }

  std::optional<OJson> ValueInner() {
    SkipSpace();
    if (i_ >= s_.size()) return std::nullopt;
    const char c = s_[i_];
    if (c == '[') return Sequence(']');
    if (c == '(') return Parenthesized();
    if (c == '{') return Dict();
    if (c == '+' || c == '-') {
      ++i_;
      SkipSpace();
      auto v = Value();
      if (!v || !v->is_number()) return std::nullopt;
      if (c == '+') return v;
      if (v->is_number_float()) return OJson(-v->get<double>());
      if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX}) return std::nullopt;
      return OJson(-v->get<int64_t>());
    }
    if (IsDigit(c) || (c == '.' && i_ + 1 < s_.size() && IsDigit(s_[i_ + 1]))) return Number();
    if (c == '\'' || c == '"') return Strings();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i_;
      while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_')) ++j;
      const std::string_view word = s_.substr(i_, j - i_);
      if (j < s_.size() && (s_[j] == '\'' || s_[j] == '"') &&
          (word == "r" || word == "R" || word == "u" || word == "U"))
        return Strings();
      i_ = j;
      if (word == "True") return OJson(true);
      if (word == "False") return OJson(false);
      if (word == "None") return OJson(nullptr);
      return std::nullopt;
    }
    return std::nullopt;
  }

  std::optional<OJson> Sequence(char close) {
    ++i_;  // '[' or '(' already checked
    OJson arr = OJson::array();
    if (Eat(close)) return arr;
    while (true) {
      auto v = Value();
      if (!v) return std::nullopt;
      arr.push_back(std::move(*v));
      if (Eat(close)) return arr;
      if (!Eat(',')) return std::nullopt;
      if (Eat(close)) return arr;
    }
  }

  std::optional<OJson> Parenthesized() {
    const size_t start = i_;
    ++i_;
    if (Eat(')')) return OJson::array();
    auto v = Value();
    if (!v) return std::nullopt;
    if (Eat(')')) return v;  // (x) is just x
    i_ = start;
    return Sequence(')');  // a tuple
  }

  std::optional<OJson> Dict() {
    ++i_;
    OJson obj = OJson::object();
    if (Eat('}')) return obj;
    while (true) {
      auto k = Value();
      if (!k) return std::nullopt;
      if (!Eat(':')) return std::nullopt;  // a set, or junk
      auto v = Value();
      if (!v) return std::nullopt;
      // json.dumps converts keys to strings.
      std::string key;
      if (k->is_string()) key = k->get<std::string>();
      else if (k->is_boolean()) key = k->get<bool>() ? "true" : "false";
      else if (k->is_null()) key = "null";
      else if (k->is_number_float()) key = PyFloatRepr(k->get<double>());
      else if (k->is_number()) key = k->dump();
      else return std::nullopt;  // unhashable
      obj[key] = std::move(*v);
      if (Eat('}')) return obj;
      if (!Eat(',')) return std::nullopt;
      if (Eat('}')) return obj;
    }
  }

  std::optional<OJson> Number() {
    size_t j = i_;
    while (j < s_.size()) {
      const char c = s_[j];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') {
        ++j;
      } else if ((c == '+' || c == '-') && j > i_ && (s_[j - 1] == 'e' || s_[j - 1] == 'E') &&
                 !(s_.size() > i_ + 1 && s_[i_] == '0' && (s_[i_ + 1] == 'x' || s_[i_ + 1] == 'X'))) {
        ++j;
      } else {
        break;
      }
    }
    const std::string_view tok = s_.substr(i_, j - i_);
    i_ = j;
    if (tok.size() > 2 && tok[0] == '0' && std::isalpha(static_cast<unsigned char>(tok[1]))) {
      const char p = static_cast<char>(std::tolower(static_cast<unsigned char>(tok[1])));
      const int base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
      if (!base) return std::nullopt;
      std::string_view digits = tok.substr(2);
      if (!digits.empty() && digits[0] == '_') digits.remove_prefix(1);
      const auto d = StripUnderscores(digits, base);
      if (!d) return std::nullopt;
      errno = 0;
      const unsigned long long v = std::strtoull(d->c_str(), nullptr, base);
      if (errno || v > uint64_t{INT64_MAX}) return std::nullopt;
      return OJson(static_cast<int64_t>(v));
    }
    if (!tok.empty() && (tok.back() == 'j' || tok.back() == 'J')) return std::nullopt;  // complex
    if (tok.find_first_of(".eE") != std::string_view::npos) {
      const auto f = PyFloatText(tok);
      if (!f || !std::isfinite(*f) || tok.find_first_of("iInN") != std::string_view::npos) return std::nullopt;
      return OJson(*f);
    }
    const auto digits = StripUnderscores(tok, 10);
    if (!digits) return std::nullopt;
    if ((*digits)[0] == '0' && digits->find_first_not_of('0') != std::string::npos) return std::nullopt;
    errno = 0;
    const long long v = std::strtoll(digits->c_str(), nullptr, 10);
    if (errno) return std::nullopt;
    return OJson(static_cast<int64_t>(v));
  }

  // One or more adjacent string literals.
  std::optional<OJson> Strings() {
    std::string all;
    bool any = false;
    while (true) {
      SkipSpace();
      size_t j = i_;
      bool raw = false;
      while (j < s_.size() && std::isalpha(static_cast<unsigned char>(s_[j]))) {
        const char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[j])));
        if (p == 'r') raw = true;
        else if (p != 'u') return any ? std::optional<OJson>(OJson(all)) : std::nullopt;
        ++j;
      }
      if (j >= s_.size() || (s_[j] != '\'' && s_[j] != '"') || j - i_ > 2) {
        if (!any) return std::nullopt;
        break;
      }
      i_ = j;
      if (!OneString(raw, &all)) return std::nullopt;
      any = true;
    }
    return OJson(all);
  }

  bool OneString(bool raw, std::string* out) {
    const char q = s_[i_];
    const bool triple = s_.substr(i_, 3) == std::string(3, q);
    i_ += triple ? 3 : 1;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (triple ? s_.substr(i_, 3) == std::string(3, q) : c == q) {
        i_ += triple ? 3 : 1;
        return true;
      }
      if (c == '\n' && !triple) return false;
      if (c != '\\') {
        out->push_back(c);
        ++i_;
        continue;
      }
      if (i_ + 1 >= s_.size()) return false;
      const char e = s_[i_ + 1];
      if (raw) {
        out->push_back('\\');
        out->push_back(e);
        i_ += 2;
        continue;
      }
      i_ += 2;
      switch (e) {
        case '\n': break;
        case '\\': out->push_back('\\'); break;
        case '\'': out->push_back('\''); break;
        case '"': out->push_back('"'); break;
        case 'a': out->push_back('\a'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'v': out->push_back('\v'); break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i_ + n > s_.size()) return false;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = s_[i_ + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
          AppendUtf8(out, cp);
          i_ += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '7'; ++k, ++i_)
              cp = cp * 8 + static_cast<uint32_t>(s_[i_] - '0');
            AppendUtf8(out, cp);
          } else {  // unknown escapes keep the backslash
            out->push_back('\\');
            out->push_back(e);
          }
      }
    }
    return false;
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

std::optional<std::string> PyIntText(std::string_view text) {
  std::string_view s = Strip(text);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  auto digits = StripUnderscores(s, 10);
  if (!digits) return std::nullopt;
  const size_t nz = digits->find_first_not_of('0');
  if (nz == std::string::npos) return std::string("0");
  std::string out = neg ? "-" : "";
  out.append(*digits, nz, std::string::npos);
  return out;
}

std::optional<double> PyFloatText(std::string_view text) {
  std::string_view s = Strip(text);
  std::string_view body = s;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  std::string lower(body);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "inf" || lower == "infinity") return neg ? -INFINITY : INFINITY;
  if (lower == "nan") return NAN;
  // Digits, '.', exponent; underscores only between digits.
  std::string clean;
  bool seen_digit = false, seen_dot = false, seen_exp = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (IsDigit(c)) {
      clean.push_back(c);
      seen_digit = true;
    } else if (c == '_') {
      if (i == 0 || i + 1 >= body.size() || !IsDigit(body[i - 1]) || !IsDigit(body[i + 1])) return std::nullopt;
    } else if (c == '.' && !seen_dot && !seen_exp) {
      clean.push_back(c);
      seen_dot = true;
    } else if ((c == 'e' || c == 'E') && seen_digit && !seen_exp) {
      clean.push_back('e');
      seen_exp = true;
      if (i + 1 < body.size() && (body[i + 1] == '+' || body[i + 1] == '-')) clean.push_back(body[++i]);
      if (i + 1 >= body.size() || !IsDigit(body[i + 1])) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  if (!seen_digit) return std::nullopt;
  const double v = std::strtod(clean.c_str(), nullptr);
  return neg ? -v : v;
}

std::optional<nlohmann::ordered_json> PyLiteralEval(std::string_view text) {
  // literal_eval strips leading spaces and tabs itself.
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return LiteralParser(text).ParseAll();
}

}  // namespace tern::api
