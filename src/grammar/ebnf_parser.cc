#include "grammar/ebnf_parser.h"

#include <cctype>
#include <string>
#include <unordered_set>

namespace tern::grammar {
namespace {

constexpr int kMaxNesting = 200;  // parentheses; deeper input is an error, not a stack overflow

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  Result<GrammarAst> Run() {
    GrammarAst g;
    SkipSpace();
    while (pos_ < t_.size()) {
      if (!IsNameStart(t_[pos_])) return Fail("expected a rule name");
      std::string name = Name();
      SkipSpace();
      if (t_.substr(pos_, 3) != "::=") return Fail("expected '::=' after rule name '" + name + "'");
      pos_ += 3;
      Expr body;
      if (!Alternatives(&body, 0)) return error_;
      if (!defined_.insert(name).second) return Fail("rule '" + name + "' is defined twice");
      g.rules.push_back({std::move(name), std::move(body)});
      SkipSpace();
    }
    if (g.rules.empty()) return Status::Error("EBNF grammar: no rules");
    bool has_root = false;
    for (const Rule& r : g.rules) has_root = has_root || r.name == "root";
    if (!has_root) return Status::Error("EBNF grammar: no rule named 'root'");
    return g;
  }

 private:
  Status Fail(const std::string& what) {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < t_.size(); ++i) {
      if (t_[i] == '\n') ++line, col = 1;
      else ++col;
    }
    error_ = Status::Errorf("EBNF grammar, line {} column {}: {}", line, col, what);
    return error_;
  }

  bool Err(const std::string& what) {
    (void)Fail(what);
    return false;
  }

  void SkipSpace() {
    while (pos_ < t_.size()) {
      if (std::isspace(static_cast<unsigned char>(t_[pos_]))) {
        ++pos_;
      } else if (t_[pos_] == '#') {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string Name() {
    const size_t b = pos_;
    while (pos_ < t_.size() && IsNameChar(t_[pos_])) ++pos_;
    return std::string(t_.substr(b, pos_ - b));
  }

  // Whether `name ::=` starts at pos_ (the end of the current rule).
  bool AtRuleStart() const {
    size_t p = pos_;
    if (p >= t_.size() || !IsNameStart(t_[p])) return false;
    while (p < t_.size() && IsNameChar(t_[p])) ++p;
    while (p < t_.size() && (t_[p] == ' ' || t_[p] == '\t' || t_[p] == '\r' || t_[p] == '\n')) ++p;
    return t_.substr(p, 3) == "::=";
  }

  bool Alternatives(Expr* out, int depth) {
    if (depth > kMaxNesting) return Err("nesting too deep");
    std::vector<Expr> alts;
    for (;;) {
      Expr seq;
      if (!Sequence(&seq, depth)) return false;
      alts.push_back(std::move(seq));
      SkipSpace();
      if (pos_ < t_.size() && t_[pos_] == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    *out = alts.size() == 1 ? std::move(alts[0]) : Expr::Alt(std::move(alts));
    return true;
  }

  bool Sequence(Expr* out, int depth) {
    std::vector<Expr> items;
    for (;;) {
      SkipSpace();
      if (pos_ >= t_.size() || t_[pos_] == '|' || t_[pos_] == ')' || AtRuleStart()) break;
      Expr item;
      if (!Item(&item, depth)) return false;
      if (!Quantifier(&item)) return false;
      items.push_back(std::move(item));
    }
    if (items.empty()) *out = Expr::Empty();
    else if (items.size() == 1) *out = std::move(items[0]);
    else *out = Expr::Seq(std::move(items));
    return true;
  }

  bool Item(Expr* out, int depth) {
    const char c = t_[pos_];
    if (c == '"' || c == '\'') {
      std::string s;
      if (!QuotedString(c, &s)) return false;
      *out = s.empty() ? Expr::Empty() : Expr::Literal(std::move(s));
      return true;
    }
    if (c == '[') return CharClass(out);
    if (c == '.') {
      ++pos_;
      *out = Expr::Class({{0, 0x10FFFF}});
      return true;
    }
    if (c == '(') {
      ++pos_;
      SkipSpace();
      if (pos_ < t_.size() && t_[pos_] == '=') return Err("lookahead assertions '(= ...)' are not supported");
      if (!Alternatives(out, depth + 1)) return false;
      SkipSpace();
      if (pos_ >= t_.size() || t_[pos_] != ')') return Err("expected ')'");
      ++pos_;
      return true;
    }
    if (IsNameStart(c)) {
      *out = Expr::Ref(Name());
      return true;
    }
    return Err(std::string("unexpected character '") + c + "'");
  }

  bool Quantifier(Expr* item) {
    if (pos_ >= t_.size()) return true;
    const char c = t_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      *item = Expr::Repeat(std::move(*item), c == '+' ? 1 : 0, c == '?' ? 1 : -1);
      return Quantifier(item);
    }
    if (c != '{') return true;
    ++pos_;
    int64_t lo = 0, hi = 0;
    if (!Number(&lo)) return false;
    hi = lo;
    SkipSpace();
    if (pos_ < t_.size() && t_[pos_] == ',') {
      ++pos_;
      SkipSpace();
      if (pos_ < t_.size() && t_[pos_] == '}') hi = -1;
      else if (!Number(&hi)) return false;
    }
    SkipSpace();
    if (pos_ >= t_.size() || t_[pos_] != '}') return Err("expected '}' in repetition");
    ++pos_;
    if (hi != -1 && hi < lo) return Err("repetition {n,m} with m < n");
    *item = Expr::Repeat(std::move(*item), lo, hi);
    return Quantifier(item);
  }

  bool Number(int64_t* v) {
    SkipSpace();
    const size_t b = pos_;
    int64_t n = 0;
    while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) {
      n = n * 10 + (t_[pos_] - '0');
      if (n > 1000000) return Err("repetition count too large");
      ++pos_;
    }
    if (pos_ == b) return Err("expected a number");
    *v = n;
    return true;
  }

  // One escape after '\' (pos_ at the character after the backslash).
  bool Escape(uint32_t* cp) {
    if (pos_ >= t_.size()) return Err("unterminated escape");
    const char c = t_[pos_++];
    auto hex = [&](int n) -> bool {
      uint32_t v = 0;
      for (int i = 0; i < n; ++i) {
        if (pos_ >= t_.size() || !std::isxdigit(static_cast<unsigned char>(t_[pos_])))
          return Err("bad hex escape");
        const char h = t_[pos_++];
        v = v * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      *cp = v;
      return true;
    };
    switch (c) {
      case 'n': *cp = '\n'; return true;
      case 't': *cp = '\t'; return true;
      case 'r': *cp = '\r'; return true;
      case 'f': *cp = '\f'; return true;
      case 'v': *cp = '\v'; return true;
      case '0': *cp = 0; return true;
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      default: *cp = static_cast<unsigned char>(c); return true;
    }
  }

  // The next code point of the text (UTF-8), or an escape.
  bool CodePoint(uint32_t* cp, bool* escaped) {
    *escaped = false;
    const unsigned char c = static_cast<unsigned char>(t_[pos_]);
    if (c == '\\') {
      ++pos_;
      *escaped = true;
      if (!Escape(cp)) return false;
    } else {
      int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
      if (pos_ + size_t(n) > t_.size()) return Err("invalid UTF-8");
      for (int i = 1; i < n; ++i) v = (v << 6) | (static_cast<unsigned char>(t_[pos_ + size_t(i)]) & 0x3F);
      pos_ += size_t(n);
      *cp = v;
    }
    if (*cp > 0x10FFFF) return Err("code point out of range");
    return true;
  }

  bool QuotedString(char quote, std::string* out) {
    ++pos_;
    for (;;) {
      if (pos_ >= t_.size()) return Err("unterminated string");
      if (t_[pos_] == quote) {
        ++pos_;
        return true;
      }
      uint32_t cp = 0;
      bool esc = false;
      if (!CodePoint(&cp, &esc)) return false;
      AppendUtf8(cp, out);
    }
  }

  bool CharClass(Expr* out) {
    ++pos_;
    bool negated = false;
    if (pos_ < t_.size() && t_[pos_] == '^') negated = true, ++pos_;
    std::vector<CodeRange> ranges;
    for (;;) {
      if (pos_ >= t_.size()) return Err("unterminated character class");
      if (t_[pos_] == ']') {
        ++pos_;
        break;
      }
      uint32_t lo = 0, hi = 0;
      bool esc = false;
      if (!CodePoint(&lo, &esc)) return false;
      hi = lo;
      if (pos_ + 1 < t_.size() && t_[pos_] == '-' && t_[pos_ + 1] != ']') {
        ++pos_;
        if (!CodePoint(&hi, &esc)) return false;
        if (hi < lo) return Err("character range out of order");
      }
      ranges.emplace_back(lo, hi);
    }
    *out = Expr::Class(std::move(ranges), negated);
    return true;
  }

  std::string_view t_;
  size_t pos_ = 0;
  std::unordered_set<std::string> defined_;  // rule names so far
  Status error_;
};

}  // namespace

Result<GrammarAst> ParseEbnf(std::string_view text) { return Parser(text).Run(); }

std::string EbnfQuote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20) out += fmt::format("\\x{:02x}", c);
    else out += char(c);
  }
  return out + "\"";
}

}  // namespace tern::grammar
