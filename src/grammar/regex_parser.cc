#include "grammar/regex_parser.h"

#include <cctype>

#include <fmt/format.h>

namespace tern::grammar {
namespace {

constexpr int kMaxNesting = 200;

const std::vector<CodeRange> kDigit = {{'0', '9'}};
const std::vector<CodeRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// JavaScript's \s: WhiteSpace and LineTerminator code points.
const std::vector<CodeRange> kSpace = {{0x09, 0x0D}, {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                                       {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const std::vector<CodeRange> kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

// The JSON.stringify form of one code point that must be escaped, else "".
std::string JsonEscape(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return cp < 0x20 ? fmt::format("\\u{:04x}", cp) : "";
  }
}

class RegexParser {
 public:
  RegexParser(std::string_view p, const RegexOptions& o) : p_(p), o_(o) {}

  Result<Expr> Run() {
    std::vector<Expr> alts;
    for (;;) {
      bool anchored_start = false, anchored_end = false;
      if (pos_ < p_.size() && p_[pos_] == '^') anchored_start = true, ++pos_;
      Expr seq;
      if (!Sequence(&seq, 0, &anchored_end)) return error_;
      if (o_.search) {
        std::vector<Expr> parts;
        if (!anchored_start) parts.push_back(Expr::Repeat(AnyChar(), 0, -1));
        parts.push_back(std::move(seq));
        if (!anchored_end) parts.push_back(Expr::Repeat(AnyChar(), 0, -1));
        seq = Expr::Seq(std::move(parts));
      }
      alts.push_back(std::move(seq));
      if (pos_ < p_.size() && p_[pos_] == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    if (pos_ < p_.size()) return Fail(p_[pos_] == ')' ? "unmatched ')'" : "unexpected character");
    return alts.size() == 1 ? std::move(alts[0]) : Expr::Alt(std::move(alts));
  }

 private:
  Status Fail(std::string_view what) {
    error_ = Status::Errorf("regex {:?}, at offset {}: {}", std::string(p_.substr(0, 200)), pos_, what);
    return error_;
  }
  bool Err(std::string_view what) {
    (void)Fail(what);
    return false;
  }

  // A code point set as an expression (JSON-escaped in json_string mode).
  Expr Set(std::vector<CodeRange> ranges) {
    ranges = NormalizeRanges(std::move(ranges));
    if (!o_.json_string) return Expr::Class(std::move(ranges));
    std::vector<Expr> alts;
    auto plain = IntersectRanges(ranges, JsonPlainChars());
    if (!plain.empty()) alts.push_back(Expr::Class(std::move(plain)));
    for (const auto& [lo, hi] : ranges)
      for (uint32_t cp = lo; cp <= hi && cp < 0x80; ++cp)
        if (std::string e = JsonEscape(cp); !e.empty()) alts.push_back(Expr::Literal(e));
    if (alts.size() == 1) return std::move(alts[0]);
    return Expr::Alt(std::move(alts));
  }
  Expr Char(uint32_t cp) {
    if (o_.json_string)
      if (std::string e = JsonEscape(cp); !e.empty()) return Expr::Literal(e);
    std::string s;
    AppendUtf8(cp, &s);
    return Expr::Literal(s);
  }
  Expr AnyChar() { return Set(ComplementRanges(kLineTerminators)); }

  bool Alternatives(Expr* out, int depth) {
    if (depth > kMaxNesting) return Err("nesting too deep");
    std::vector<Expr> alts;
    for (;;) {
      Expr seq;
      if (!Sequence(&seq, depth, nullptr)) return false;
      alts.push_back(std::move(seq));
      if (pos_ < p_.size() && p_[pos_] == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    *out = alts.size() == 1 ? std::move(alts[0]) : Expr::Alt(std::move(alts));
    return true;
  }

  // anchored_end: non-null at the top level, where a final '$' is allowed.
  bool Sequence(Expr* out, int depth, bool* anchored_end) {
    std::vector<Expr> items;
    while (pos_ < p_.size() && p_[pos_] != '|' && p_[pos_] != ')') {
      if (p_[pos_] == '$') {
        ++pos_;
        if (anchored_end && (pos_ == p_.size() || p_[pos_] == '|')) {
          *anchored_end = true;
          break;
        }
        return Err("'$' is only supported at the end of the pattern");
      }
      if (p_[pos_] == '^') return Err("'^' is only supported at the start of the pattern");
      Expr atom;
      if (!Atom(&atom, depth)) return false;
      if (!Quantifier(&atom)) return false;
      items.push_back(std::move(atom));
    }
    if (items.empty()) *out = Expr::Empty();
    else if (items.size() == 1) *out = std::move(items[0]);
    else *out = Expr::Seq(std::move(items));
    return true;
  }

  bool Quantifier(Expr* atom) {
    if (pos_ >= p_.size()) return true;
    const char c = p_[pos_];
    int64_t lo, hi;
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      lo = c == '+' ? 1 : 0;
      hi = c == '?' ? 1 : -1;
    } else if (c == '{' && IsCountedRepeat()) {
      ++pos_;
      lo = ReadInt();
      hi = lo;
      if (p_[pos_] == ',') {
        ++pos_;
        hi = p_[pos_] == '}' ? -1 : ReadInt();
      }
      ++pos_;  // '}'
      if (lo > 100000 || hi > 100000) return Err("repetition count too large");
      if (hi != -1 && hi < lo) return Err("numbers out of order in {} quantifier");
    } else {
      return true;
    }
    if (pos_ < p_.size() && p_[pos_] == '?') ++pos_;  // lazy: the same strings
    else if (pos_ < p_.size() && p_[pos_] == '+') return Err("possessive quantifiers are not supported");
    if (pos_ < p_.size() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '?'))
      return Err("nothing to repeat");
    *atom = Expr::Repeat(std::move(*atom), lo, hi);
    return true;
  }

  // "{n}", "{n,}" or "{n,m}" at pos_ (otherwise '{' is a literal, as in JavaScript).
  bool IsCountedRepeat() const {
    size_t p = pos_ + 1, digits = 0;
    while (p < p_.size() && std::isdigit(static_cast<unsigned char>(p_[p]))) ++p, ++digits;
    if (digits == 0) return false;
    if (p < p_.size() && p_[p] == ',') {
      ++p;
      while (p < p_.size() && std::isdigit(static_cast<unsigned char>(p_[p]))) ++p;
    }
    return p < p_.size() && p_[p] == '}';
  }
  int64_t ReadInt() {
    int64_t v = 0;
    while (pos_ < p_.size() && std::isdigit(static_cast<unsigned char>(p_[pos_]))) {
      v = std::min<int64_t>(v * 10 + (p_[pos_] - '0'), 1000000000);
      ++pos_;
    }
    return v;
  }

  bool Atom(Expr* out, int depth) {
    const char c = p_[pos_];
    if (c == '(') {
      ++pos_;
      if (p_.substr(pos_, 2) == "?:") {
        pos_ += 2;
      } else if (p_.substr(pos_, 2) == "?=" || p_.substr(pos_, 2) == "?!" || p_.substr(pos_, 3) == "?<=" ||
                 p_.substr(pos_, 3) == "?<!") {
        return Err("lookaround assertions are not supported");
      } else if (p_.substr(pos_, 2) == "?<" || p_.substr(pos_, 3) == "?P<") {
        const size_t close = p_.find('>', pos_);
        if (close == std::string_view::npos) return Err("unterminated group name");
        pos_ = close + 1;
      } else if (pos_ < p_.size() && p_[pos_] == '?') {
        return Err("inline flags and other (?...) groups are not supported");
      }
      if (!Alternatives(out, depth + 1)) return false;
      if (pos_ >= p_.size() || p_[pos_] != ')') return Err("missing ')'");
      ++pos_;
      return true;
    }
    if (c == '[') return Class(out);
    if (c == '.') {
      ++pos_;
      *out = AnyChar();
      return true;
    }
    if (c == '*' || c == '+' || c == '?') return Err("nothing to repeat");
    if (c == '\\') {
      ++pos_;
      std::vector<CodeRange> set;
      uint32_t cp = 0;
      bool is_set = false;
      if (!Escape(/*in_class=*/false, &cp, &set, &is_set)) return false;
      *out = is_set ? Set(std::move(set)) : Char(cp);
      return true;
    }
    uint32_t cp = 0;
    if (!Utf8(&cp)) return false;
    *out = Char(cp);
    return true;
  }

  bool Utf8(uint32_t* cp) {
    const unsigned char c = static_cast<unsigned char>(p_[pos_]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (pos_ + size_t(n) > p_.size()) return Err("invalid UTF-8");
    uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < n; ++i) v = (v << 6) | (static_cast<unsigned char>(p_[pos_ + size_t(i)]) & 0x3F);
    pos_ += size_t(n);
    *cp = v;
    return true;
  }

  bool Hex(int n, uint32_t* v) {
    *v = 0;
    for (int i = 0; i < n; ++i) {
      if (pos_ >= p_.size() || !std::isxdigit(static_cast<unsigned char>(p_[pos_]))) return Err("bad hex escape");
      const char h = p_[pos_++];
      *v = *v * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : std::tolower(h) - 'a' + 10);
    }
    return true;
  }

  // After a backslash: a single code point (*cp) or a set (*set, *is_set).
  bool Escape(bool in_class, uint32_t* cp, std::vector<CodeRange>* set, bool* is_set) {
    *is_set = false;
    if (pos_ >= p_.size()) return Err("trailing backslash");
    const char c = p_[pos_++];
    auto negate = [&](const std::vector<CodeRange>& r) {
      *set = ComplementRanges(r);
      *is_set = true;
      return true;
    };
    switch (c) {
      case 'd': *set = kDigit, *is_set = true; return true;
      case 'w': *set = kWord, *is_set = true; return true;
      case 's': *set = kSpace, *is_set = true; return true;
      case 'D': return negate(kDigit);
      case 'W': return negate(kWord);
      case 'S': return negate(kSpace);
      case 'n': *cp = '\n'; return true;
      case 't': *cp = '\t'; return true;
      case 'r': *cp = '\r'; return true;
      case 'f': *cp = '\f'; return true;
      case 'v': *cp = '\v'; return true;
      case '0': *cp = 0; return true;
      case 'x': return Hex(2, cp);
      case 'u':
        if (pos_ < p_.size() && p_[pos_] == '{') {
          ++pos_;
          const size_t close = p_.find('}', pos_);
          if (close == std::string_view::npos || close == pos_ || close - pos_ > 6) return Err("bad \\u{...} escape");
          if (!Hex(int(close - pos_), cp)) return false;
          ++pos_;
          if (*cp > 0x10FFFF) return Err("code point out of range");
          return true;
        }
        return Hex(4, cp);
      case 'b':
        if (in_class) {
          *cp = '\b';
          return true;
        }
        return Err("word boundaries (\\b) are not supported");
      case 'B': return Err("word boundaries (\\B) are not supported");
      case 'p':
      case 'P': return Err("Unicode property escapes (\\p{...}) are not supported");
      case 'c':
        if (pos_ < p_.size() && std::isalpha(static_cast<unsigned char>(p_[pos_]))) {
          *cp = uint32_t(p_[pos_++]) % 32;
          return true;
        }
        return Err("bad \\c escape");
      default:
        if (std::isdigit(static_cast<unsigned char>(c))) return Err("backreferences are not supported");
        if (std::isalnum(static_cast<unsigned char>(c))) return Err(fmt::format("unknown escape \\{}", c));
        --pos_;
        return Utf8(cp);
    }
  }

  bool Class(Expr* out) {
    ++pos_;
    bool negated = false;
    if (pos_ < p_.size() && p_[pos_] == '^') negated = true, ++pos_;
    std::vector<CodeRange> ranges;
    bool first = true;
    for (;;) {
      if (pos_ >= p_.size()) return Err("unterminated character class");
      if (p_[pos_] == ']' && !first) {
        ++pos_;
        break;
      }
      if (p_[pos_] == ']' && first) {  // "[]" matches nothing in JavaScript; "[^]" anything
        ++pos_;
        *out = negated ? Set({{0, 0x10FFFF}}) : Expr::Class({}, false);
        if (!negated) return Err("empty character class [] matches nothing");
        return true;
      }
      first = false;
      uint32_t lo = 0;
      std::vector<CodeRange> set;
      bool is_set = false;
      if (p_[pos_] == '\\') {
        ++pos_;
        if (!Escape(/*in_class=*/true, &lo, &set, &is_set)) return false;
      } else if (!Utf8(&lo)) {
        return false;
      }
      if (is_set) {
        ranges.insert(ranges.end(), set.begin(), set.end());
        continue;
      }
      uint32_t hi = lo;
      if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        if (p_[pos_] == '\\') {
          ++pos_;
          if (!Escape(true, &hi, &set, &is_set)) return false;
          if (is_set) return Err("a class escape cannot end a range");
        } else if (!Utf8(&hi)) {
          return false;
        }
        if (hi < lo) return Err("range out of order in character class");
      }
      ranges.emplace_back(lo, hi);
    }
    *out = Set(negated ? ComplementRanges(ranges) : ranges);
    return true;
  }

  std::string_view p_;
  RegexOptions o_;
  size_t pos_ = 0;
  Status error_;
};

}  // namespace

std::vector<CodeRange> JsonPlainChars() { return ComplementRanges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}); }

Expr JsonStringChar() {
  std::vector<CodeRange> hex = {{'0', '9'}, {'A', 'F'}, {'a', 'f'}};
  Expr escape = Expr::Seq({Expr::Literal("\\"),
                           Expr::Alt({Expr::Class({{'"', '"'}, {'/', '/'}, {'\\', '\\'}, {'b', 'b'}, {'f', 'f'},
                                                   {'n', 'n'}, {'r', 'r'}, {'t', 't'}}),
                                      Expr::Seq({Expr::Literal("u"), Expr::Repeat(Expr::Class(hex), 4, 4)})})});
  return Expr::Alt({Expr::Class(JsonPlainChars()), std::move(escape)});
}

Result<Expr> ParseRegex(std::string_view pattern, const RegexOptions& options) {
  return RegexParser(pattern, options).Run();
}

}  // namespace tern::grammar
